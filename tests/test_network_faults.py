"""Network faults in a verifier's test output (kotlin_bench.scoring.network_faults): Gradle's own words.

The Gradle 4.4 snippets were printed by Debian's gradle 4.4.1 building examples/bases/tally against a
Maven repository that answered 503, then was stopped; the Gradle 8 ones are Gradle 8's wording of the
same failures (the real tasks print it). The end-to-end behaviour (real Gradle, the stand-in repository
stopped or answering 503 during a verify step) is in tests/test_gradle_examples.py.
"""

from __future__ import annotations

from kotlin_bench.scoring.network_faults import added_lines, describe, faults_in, hosts_in, the_networks

POM = "https://repo.examples.test/maven2/org/apache/commons/commons-lang3/3.12.0/commons-lang3-3.12.0.pom"
GRADLE4_503 = f"""\
* What went wrong:
Could not resolve all files for configuration ':core:testCompileClasspath'.
> Could not resolve org.apache.commons:commons-lang3:3.12.0.
  Required by:
      project :core
   > Could not resolve org.apache.commons:commons-lang3:3.12.0.
      > Could not get resource '{POM}'.
         > Could not GET '{POM}'. Received status code 503 from server: Service Unavailable
"""
GRADLE4_TIMEOUT = f"""\
   > Could not resolve org.apache.commons:commons-lang3:3.12.0.
      > Could not get resource '{POM}'.
         > Could not GET '{POM}'.
            > Connect to repo.examples.test:443 [repo.examples.test/172.22.0.2] failed: Connect timed out
"""
GRADLE4_NOT_FOUND = """\
Could not resolve all files for configuration ':core:testCompileClasspath'.
> Could not find org.apache.commons:commons-nothere:1.0.
  Searched in the following locations:
      https://repo.examples.test/maven2/org/apache/commons/commons-nothere/1.0/commons-nothere-1.0.pom
"""
GRADLE8_REFUSED = """\
Execution failed for task ':app:compileKotlin'.
> Could not resolve all files for configuration ':app:compileClasspath'.
   > Could not download kotlin-stdlib-1.9.22.jar (org.jetbrains.kotlin:kotlin-stdlib:1.9.22)
      > Could not get resource 'https://repo.maven.apache.org/maven2/org/jetbrains/kotlin/kotlin-stdlib/1.9.22/kotlin-stdlib-1.9.22.jar'.
         > Could not GET 'https://repo.maven.apache.org/maven2/org/jetbrains/kotlin/kotlin-stdlib/1.9.22/kotlin-stdlib-1.9.22.jar'.
            > Connect to repo.maven.apache.org:443 [repo.maven.apache.org/151.101.0.215] failed: Connection refused
"""
GRADLE8_429_AND_403 = """\
> Could not resolve all dependencies for configuration ':app:debugRuntimeClasspath'.
   > Could not resolve com.squareup.okio:okio:3.6.0.
      > Could not get resource 'https://plugins.gradle.org/m2/com/squareup/okio/okio/3.6.0/okio-3.6.0.module'.
         > Could not GET 'https://plugins.gradle.org/m2/com/squareup/okio/okio/3.6.0/okio-3.6.0.module'. Received status code 429 from server: Too Many Requests
   > Could not resolve com.acme:private:1.0.
      > Could not get resource 'https://maven.acme.example/com/acme/private/1.0/private-1.0.pom'.
         > Could not GET 'https://maven.acme.example/com/acme/private/1.0/private-1.0.pom'. Received status code 403 from server: Forbidden
"""
WRAPPER = """\
Downloading https://services.gradle.org/distributions/gradle-8.5-bin.zip
Exception in thread "main" java.io.IOException: Downloading from https://services.gradle.org/distributions/gradle-8.5-bin.zip failed: timeout (10000ms)
"""
COMPILE_ERROR = """\
> Task :core:compileJava FAILED
/home/tally/core/src/main/java/tally/Amount.java:12: error: ';' expected
BUILD FAILED in 3s
"""


def test_gradle4_and_gradle8_faults_name_artifact_host_and_cause() -> None:
    (fault,) = faults_in(GRADLE4_503)
    assert (fault.artifact, fault.host, fault.cause, fault.url) == (
        "org.apache.commons:commons-lang3:3.12.0",
        "repo.examples.test",
        "HTTP 503",
        POM,
    )
    assert [f.cause for f in faults_in(GRADLE4_TIMEOUT)] == ["Connect timed out"]
    (refused,) = faults_in(GRADLE8_REFUSED)
    assert refused.artifact == "org.jetbrains.kotlin:kotlin-stdlib:1.9.22"
    assert (refused.host, refused.cause) == ("repo.maven.apache.org", "Connection refused")
    # 429 is the network's; 403 (like 404) is an answer about the artifact, not a fault
    assert [(f.artifact, f.cause) for f in faults_in(GRADLE8_429_AND_403)] == [
        ("com.squareup.okio:okio:3.6.0", "HTTP 429")
    ]
    (wrapper,) = faults_in(WRAPPER)
    assert (wrapper.artifact, wrapper.host) == ("Gradle distribution", "services.gradle.org")
    assert "repo.examples.test (HTTP 503) for org.apache.commons:commons-lang3:3.12.0" in describe(
        faults_in(GRADLE4_503)
    )


def test_what_stays_the_agents() -> None:
    assert faults_in(GRADLE4_NOT_FOUND) == []
    assert faults_in(COMPILE_ERROR) == []
    # a fault on a host the base build does not name (the agent's own repository) is not the network's
    faults = faults_in(GRADLE4_503 + GRADLE8_REFUSED)
    assert [f.host for f in the_networks(faults, {"repo.examples.test"})] == ["repo.examples.test"]
    dead = faults_in(GRADLE4_TIMEOUT.replace("repo.examples.test/maven2", "repo.examples.test:8443/maven2"))
    assert dead[0].host == "repo.examples.test:8443"
    assert the_networks(dead, {"repo.examples.test"}) == []


def test_hosts_of_build_files_and_of_a_patchs_added_lines() -> None:
    build = """
        repositories {
            mavenCentral()
            maven { url 'https://repo.examples.test/maven2/' }
            maven { url = uri("https://Maven.Acme.example:8443/m2") }
        }
    """
    assert hosts_in(build) == {
        "repo.examples.test",
        "maven.acme.example:8443",
        "repo.maven.apache.org",
        "repo1.maven.org",
    }
    patch = "+++ b/build.gradle\n-    maven { url 'https://old.example/' }\n+    maven { url 'https://new.example/' }\n"
    assert hosts_in(added_lines(patch)) == {"new.example"}
