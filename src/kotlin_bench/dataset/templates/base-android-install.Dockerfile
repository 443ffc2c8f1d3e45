
# Android SDK ({{android_sdk_packages}}), licenses accepted.
# Command-line tools build {{cmdline_tools}}: its sdkmanager stays on the PATH and runs on this image's
# own JDK (build 7302050 runs on JDK 8 and 11, later builds need JDK 17).
ENV ANDROID_HOME=/opt/android-sdk \
    ANDROID_SDK_ROOT=/opt/android-sdk
ENV PATH="${PATH}:/opt/android-sdk/cmdline-tools/latest/bin:/opt/android-sdk/platform-tools"
RUN mkdir -p "$ANDROID_HOME/cmdline-tools" \
 && curl -fsSL -o /tmp/cmdline-tools.zip \
      "https://dl.google.com/android/repository/commandlinetools-linux-{{cmdline_tools}}_latest.zip" \
 && unzip -q /tmp/cmdline-tools.zip -d "$ANDROID_HOME/cmdline-tools" \
 && mv "$ANDROID_HOME/cmdline-tools/cmdline-tools" "$ANDROID_HOME/cmdline-tools/latest" \
 && rm /tmp/cmdline-tools.zip
RUN yes | sdkmanager --licenses > /dev/null \
 && sdkmanager {{sdk_arguments}}
