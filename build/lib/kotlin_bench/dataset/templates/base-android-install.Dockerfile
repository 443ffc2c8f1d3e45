
# Android SDK ({{android_sdk_packages}}), licenses accepted.
COPY --from=android-sdk /opt/android-sdk /opt/android-sdk
ENV ANDROID_HOME=/opt/android-sdk \
    ANDROID_SDK_ROOT=/opt/android-sdk
ENV PATH="${PATH}:/opt/android-sdk/cmdline-tools/latest/bin:/opt/android-sdk/platform-tools"
