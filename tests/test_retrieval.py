"""The retrieval rule of the egress record (`kotlin_bench.core.retrieval`) and `kotlin-bench egress classify`:
URLs of every class issue 36 names, for real tasks, with the facts of the dataset specification
(dataset/kotlin-bench.json), then a made-up project whose facts hold every shape, the examples' stand-in
facts, the properties (it never raises; decoded spellings classify alike) and the copy the proxy runs.

The real facts the tables lean on (all in the spec, each with its source): detekt-7625's base is 1.23.6, its
build applies the published detekt 1.23.7 to itself (plugin, detekt-cli, detekt-formatting and what they
resolve), and the fix shipped in 2.0.0-alpha.0 and, backported, 1.23.8; dataframe-1072's base is
0.16.0-dev and its build applies dev build 0.16.0-dev-5772 of its own Gradle plugin; okhttp-6887's base is
5.0.0-SNAPSHOT with the fix first in 5.0.0-alpha.3 (Maven and Gradle both put it before the base);
ktlint-2493's base 1.2.0-SNAPSHOT, fixed in 1.1.1 (released after it, on the 1.1 line); ort-5572 has no
base version (no release precedes it); ktlint was shyiko/ktlint and moved to ktlint/ktlint, and
detekt-formatting bundles it; okhttp's GitHub id is 5152285 (the other repositories' ids are unknown);
TeXiFy is Marketplace plugin nl.rubensten.texifyidea, 9473; shadow was johnrengelman/shadow.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kotlin_bench.core import retrieval
from kotlin_bench.core.retrieval import Facts, classify, classify_request, coordinate_matches
from kotlin_bench.dataset.spec import load_dataset
from kotlin_bench.tools.cli import main
from tests.conftest import REPO

SPEC = REPO / "dataset" / "kotlin-bench.json"
BENCHMARK = load_dataset(SPEC)
CENTRAL = "https://repo1.maven.org/maven2"
PORTAL = "https://plugins.gradle.org/m2"
DETEKT = f"{CENTRAL}/io/gitlab/arturbosch/detekt"
R, OK = "retrieval", "ok"


def facts_of(task: str) -> Facts:
    return BENCHMARK.task(task).retrieval_facts()


# (task, url, verdict): grouped by the class of request issue 36 names
BASE_BUILD = [  # the base's own build resolves these: ok whatever their version
    ("detekt_detekt-7625", f"{DETEKT}/detekt-cli/1.23.7/detekt-cli-1.23.7.jar", OK),
    ("detekt_detekt-7625", f"{DETEKT}/detekt-cli/1.23.7/detekt-cli-1.23.7.pom", OK),
    ("detekt_detekt-7625", f"{DETEKT}/detekt-formatting/1.23.7/detekt-formatting-1.23.7.module", OK),
    ("detekt_detekt-7625", f"{DETEKT}/detekt-core/1.23.7/detekt-core-1.23.7.jar", OK),
    (
        "detekt_detekt-7625",
        f"{PORTAL}/io/gitlab/arturbosch/detekt/io.gitlab.arturbosch.detekt.gradle.plugin/1.23.7/"
        "io.gitlab.arturbosch.detekt.gradle.plugin-1.23.7.pom",
        OK,
    ),
    (
        "detekt_detekt-7625",
        "https://plugins-artifacts.gradle.org/io.gitlab.arturbosch.detekt/detekt-gradle-plugin/1.23.7/"
        "0f1e2d3c4b5a69788796a5b4c3d2e1f0/detekt-gradle-plugin-1.23.7.jar",
        OK,
    ),
    (
        "Kotlin_dataframe-1072",
        f"{PORTAL}/org/jetbrains/kotlinx/dataframe/org.jetbrains.kotlinx.dataframe.gradle.plugin/0.16.0-dev-5772/"
        "org.jetbrains.kotlinx.dataframe.gradle.plugin-0.16.0-dev-5772.pom",
        OK,
    ),
    ("detekt_detekt-4249", f"{DETEKT}/detekt-gradle-plugin/1.18.1/detekt-gradle-plugin-1.18.1.jar", OK),
]
AFTER_THE_BASE = [  # the project's own artifacts: after the base (and no need) is retrieval, whatever the fix
    ("detekt_detekt-7625", f"{DETEKT}/detekt-cli/1.23.8/detekt-cli-1.23.8-sources.jar", R),  # the backport
    ("detekt_detekt-7625", f"{DETEKT}/detekt-cli/1.23.8/detekt-cli-1.23.8.jar", R),
    (
        "detekt_detekt-7625",
        f"{CENTRAL}/dev/detekt/detekt-core/2.0.0-alpha.0/detekt-core-2.0.0-alpha.0.jar",
        R,
    ),
    ("detekt_detekt-7625", f"{DETEKT}/detekt-cli/1.23.9/detekt-cli-1.23.9.jar", R),
    ("detekt_detekt-4249", f"{DETEKT}/detekt-cli/1.19.0/detekt-cli-1.19.0-sources.jar", R),
    ("detekt_detekt-4249", f"{DETEKT}/detekt-cli/1.19.0-RC2/detekt-cli-1.19.0-RC2.jar", R),  # the fix
    ("detekt_detekt-7212", f"{DETEKT}/detekt-api/1.23.7/detekt-api-1.23.7-sources.jar", R),  # its backport
    ("detekt_detekt-7625", f"{DETEKT}/detekt-cli/1.23.6/detekt-cli-1.23.6-sources.jar", OK),  # the base's own
    ("detekt_detekt-7625", f"{DETEKT}/detekt-cli/1.22.0/detekt-cli-1.22.0.jar", OK),
    (
        "Kotlin_dataframe-1072",
        f"{CENTRAL}/org/jetbrains/kotlinx/dataframe-core/0.15.0/dataframe-core-0.15.0.jar",
        OK,
    ),
    (
        "Kotlin_dataframe-1072",
        f"{CENTRAL}/org/jetbrains/kotlinx/dataframe-core/0.16.0-dev-5000/dataframe-core-0.16.0-dev-5000.jar",
        R,
    ),
    (
        "Kotlin_dataframe-1072",
        f"{CENTRAL}/org/jetbrains/kotlinx/dataframe-core/1.0.0-Beta1/dataframe-core-1.0.0-Beta1-sources.jar",
        R,
    ),
    (
        "Kotlin_dataframe-641",
        f"{CENTRAL}/org/jetbrains/kotlinx/dataframe-core/0.14.0/dataframe-core-0.14.0.jar",
        R,
    ),
    (
        "Kotlin_dataframe-641",
        f"{CENTRAL}/org/jetbrains/kotlinx/dataframe-core/0.13.1/dataframe-core-0.13.1.jar",
        OK,
    ),
    (
        "square_okhttp-6887",
        f"{CENTRAL}/com/squareup/okhttp3/okhttp/5.0.0-alpha.3/okhttp-5.0.0-alpha.3.jar",
        R,
    ),
    (
        "square_okhttp-6887",
        f"{CENTRAL}/com/squareup/okhttp3/okhttp/5.0.0-alpha.4/okhttp-5.0.0-alpha.4.jar",
        R,
    ),
    ("square_okhttp-6887", f"{CENTRAL}/com/squareup/okhttp3/okhttp/4.9.1/okhttp-4.9.1-sources.jar", OK),
    (
        "pinterest_ktlint-2493",
        f"{CENTRAL}/com/pinterest/ktlint/ktlint-rule-engine/1.1.1/ktlint-rule-engine-1.1.1.jar",
        R,
    ),
    (
        "pinterest_ktlint-2493",
        f"{CENTRAL}/com/pinterest/ktlint/ktlint-rule-engine/1.1.0/ktlint-rule-engine-1.1.0.jar",
        OK,
    ),
    (
        "pinterest_ktlint-2029",
        f"{CENTRAL}/com/pinterest/ktlint/0.49.1/ktlint-0.49.1.jar",
        OK,
    ),  # the old CLI coordinate
    ("pinterest_ktlint-2029", f"{CENTRAL}/com/pinterest/ktlint/0.50.0/ktlint-0.50.0.jar", R),
    (
        "oss-review-toolkit_ort-10179",
        f"{CENTRAL}/org/ossreviewtoolkit/model/59.2.0/model-59.2.0-sources.jar",
        R,
    ),
    (
        "oss-review-toolkit_ort-10179",
        f"{CENTRAL}/org/ossreviewtoolkit/model/59.1.0/model-59.1.0-sources.jar",
        OK,
    ),
    (
        "oss-review-toolkit_ort-5572",
        f"{CENTRAL}/org/ossreviewtoolkit/model/1.0.0/model-1.0.0.jar",
        R,
    ),  # no base
    (
        "linreal_cascade-editor-16",
        f"{CENTRAL}/io/github/linreal/cascade-editor/1.3.0/cascade-editor-1.3.0.jar",
        R,
    ),
]
UNPLACED = [  # versions no order places: not known to be at or before the base
    ("detekt_detekt-7625", f"{DETEKT}/detekt-cli/main-SNAPSHOT/detekt-cli-main-SNAPSHOT.jar", R),
    ("detekt_detekt-7625", f"{DETEKT}/detekt-cli/LATEST/detekt-cli-LATEST.jar", R),
    ("detekt_detekt-7625", f"{DETEKT}/detekt-cli/RELEASE/", R),
    (
        "detekt_detekt-7625",
        "https://artifactory.example/artifactory/libs/io/gitlab/arturbosch/detekt/detekt-cli/[RELEASE]/detekt-cli-[RELEASE].jar",
        R,
    ),
    (
        "detekt_detekt-7625",
        f"{DETEKT}/detekt-cli/1.23.6-foo/detekt-cli-1.23.6-foo.jar",
        R,
    ),  # unknown qualifier
    ("detekt_detekt-7625", f"{DETEKT}/detekt-cli/v1.23.5/detekt-cli-v1.23.5.jar", R),
    ("detekt_detekt-7625", f"{DETEKT}/detekt-cli/1.23.5-SNAPSHOT/detekt-cli-1.23.5-20240101.101010-1.jar", R),
    (
        "oss-review-toolkit_ort-5572",
        f"{CENTRAL}/org/ossreviewtoolkit/model/1.0.0-SNAPSHOT/model-1.0.0-SNAPSHOT.jar",
        R,
    ),
    (
        "pinterest_ktlint-2493",
        f"{CENTRAL}/com/pinterest/ktlint/ktlint-cli/1.2.0-SNAPSHOT/ktlint-cli-1.2.0-SNAPSHOT.jar",
        R,
    ),
]
QUERIES = [  # coordinates and paths in query values, repository managers' newest-version endpoints
    (
        "detekt_detekt-7625",
        "https://nexus.example/service/rest/v1/search/assets/download?sort=version&repository=maven-central&maven.groupId=io.gitlab.arturbosch.detekt&maven.artifactId=detekt-cli&maven.extension=jar",
        R,
    ),
    (
        "detekt_detekt-7625",
        "https://nexus.example/service/local/artifact/maven/redirect?r=central&g=io.gitlab.arturbosch.detekt&a=detekt-cli&v=LATEST",
        R,
    ),
    (
        "detekt_detekt-7625",
        "https://nexus.example/service/local/artifact/maven/content?r=central&g=io.gitlab.arturbosch.detekt&a=detekt-cli&v=RELEASE&c=sources",
        R,
    ),
    (
        "detekt_detekt-7625",
        "https://nexus.example/service/local/artifact/maven/redirect?r=central&g=io.gitlab.arturbosch.detekt&a=detekt-cli&v=1.23.6",
        OK,
    ),
    (
        "detekt_detekt-7625",
        "https://artifactory.example/artifactory/api/search/latestVersion?g=io.gitlab.arturbosch.detekt&a=detekt-cli&repos=libs",
        R,
    ),
    (
        "detekt_detekt-7625",
        "https://nexus.example/x?g=io.gitlab.arturbosch.detekt&a=detekt-cli&v=%5B0%2C%29",
        R,
    ),  # [0,)
    ("detekt_detekt-7625", "https://nexus.example/x?g=io.gitlab.arturbosch.detekt&a=detekt-cli&v=(,2.0]", R),
    (
        "detekt_detekt-7625",
        "https://nexus.example/x?g=io.gitlab.arturbosch.detekt&a=detekt-cli&v=1.%2B",
        R,
    ),  # 1.+
    (
        "detekt_detekt-7625",
        "https://nexus.example/x?g=io.gitlab.arturbosch.detekt&a=detekt-cli&v=latest.release",
        R,
    ),
    (
        "detekt_detekt-7625",
        "https://nexus.example/x?maven.groupId=io.gitlab.arturbosch.detekt&sort=version",
        R,
    ),  # group only
    (
        "detekt_detekt-7625",
        "https://search.maven.org/remotecontent?filepath=io/gitlab/arturbosch/detekt/detekt-cli/1.23.8/detekt-cli-1.23.8-sources.jar",
        R,
    ),
    (
        "detekt_detekt-7625",
        "https://central.sonatype.com/api/v1/publisher/remotecontent?filepath=io%2Fgitlab%2Farturbosch%2Fdetekt%2Fdetekt-cli%2F1.23.8%2Fdetekt-cli-1.23.8.jar",
        R,
    ),
    (
        "detekt_detekt-7625",
        "https://search.maven.org/remotecontent?filepath=io/gitlab/arturbosch/detekt/detekt-cli/1.23.6/detekt-cli-1.23.6.jar",
        OK,
    ),
    # coordinates AND a file path: both judged
    (
        "detekt_detekt-7625",
        "https://nexus.example/x?g=io.gitlab.arturbosch.detekt&a=detekt-cli&v=1.23.6&filepath=io/gitlab/arturbosch/detekt/detekt-cli/1.23.8/detekt-cli-1.23.8.jar",
        R,
    ),
    (
        "detekt_detekt-7625",
        "https://nexus.example/x?filepath=io/gitlab/arturbosch/detekt/detekt-cli/1.23.6/detekt-cli-1.23.6.jar&g=io.gitlab.arturbosch.detekt&a=detekt-cli&v=1.23.8",
        R,
    ),
    (
        "detekt_detekt-7625",
        "https://cache.example/fetch?url=https%3A%2F%2Frepo1.maven.org%2Fmaven2%2Fio%2Fgitlab%2Farturbosch%2Fdetekt%2Fdetekt-cli%2F1.23.8%2Fdetekt-cli-1.23.8.jar",
        R,
    ),
    (
        "detekt_detekt-7625",
        "https://deps.example/resolve?artifact=io.gitlab.arturbosch.detekt:detekt-cli:1.23.8",
        R,
    ),
    (
        "detekt_detekt-7625",
        "https://deps.example/resolve?artifact=io.gitlab.arturbosch.detekt:detekt-cli:1.23.7",
        OK,
    ),
    (
        "detekt_detekt-7625",
        "https://central.sonatype.com/artifact/io.gitlab.arturbosch.detekt/detekt-cli/1.23.8",
        R,
    ),
    (
        "detekt_detekt-7625",
        "https://central.sonatype.com/artifact/io.gitlab.arturbosch.detekt/detekt-cli",
        OK,
    ),  # a page, no version
    (
        "detekt_detekt-7625",
        "https://nexus.example/service/rest/v1/search/assets/download?q=detekt-cli&sort=version",
        R,
    ),
    (
        "detekt_detekt-7625",
        "https://nexus.example/service/rest/v1/search/assets/download?q=junit&sort=version",
        OK,
    ),
    (
        "detekt_detekt-7625",
        "https://nexus.example/service/rest/v1/search?q=detekt-cli",
        OK,
    ),  # a search: metadata
    (
        "detekt_detekt-7625",
        f"{DETEKT}/detekt-cli?version=LATEST",
        R,
    ),  # the path names the artifact, the query the version
    ("detekt_detekt-7625", f"{DETEKT}/detekt-cli/?v=1.23.6", OK),
]
FORMS = [  # how a path can be spelled: decoded, ;params stripped, matrix params and fragments read
    (
        "detekt_detekt-7625",
        f"{CENTRAL}/io%2Fgitlab%2Farturbosch%2Fdetekt%2Fdetekt-cli%2F1.23.8%2Fdetekt-cli-1.23.8.jar",
        R,
    ),
    (
        "detekt_detekt-7625",
        f"{CENTRAL}/io%252Fgitlab%252Farturbosch%252Fdetekt%252Fdetekt-cli%252F1.23.8%252Fdetekt-cli-1.23.8.jar",
        R,
    ),
    (
        "detekt_detekt-7625",
        f"{CENTRAL}/io/gitlab;jsessionid=1F2E/arturbosch/detekt/detekt-cli/1.23.8/detekt-cli-1.23.8.jar",
        R,
    ),
    (
        "detekt_detekt-7625",
        f"{CENTRAL}/io/gitlab/arturbosch/detekt/detekt-cli/1.23.8;x=y/detekt-cli-1.23.8.jar",
        R,
    ),
    (
        "detekt_detekt-7625",
        "https://nexus.example/service;g=io.gitlab.arturbosch.detekt;a=detekt-cli;v=LATEST",
        R,
    ),
    (
        "detekt_detekt-7625",
        "https://nexus.example/browse#/io/gitlab/arturbosch/detekt/detekt-cli/1.23.8/detekt-cli-1.23.8.jar",
        R,
    ),
    (
        "detekt_detekt-7625",
        f"{CENTRAL}/x/../io/./gitlab//arturbosch/detekt/detekt-cli/1.23.8/detekt-cli-1.23.8.jar",
        R,
    ),
    (
        "detekt_detekt-7625",
        "https://REPO1.Maven.ORG/maven2/IO/GitLab/arturbosch/detekt/Detekt-Cli/1.23.8/detekt-cli-1.23.8.jar",
        R,
    ),
    (
        "detekt_detekt-7625",
        "https://repo1.maven.org/maven2\\io\\gitlab\\arturbosch\\detekt\\detekt-cli\\1.23.8\\detekt-cli-1.23.8.jar",
        R,
    ),
    (
        "detekt_detekt-7625",
        f"{CENTRAL}/remote%3Ffilepath%3Dio/gitlab/arturbosch/detekt/detekt-cli/1.23.8/detekt-cli-1.23.8.jar",
        R,
    ),
    (
        "detekt_detekt-7625",
        "repo1.maven.org/maven2/io/gitlab/arturbosch/detekt/detekt-cli/1.23.8/detekt-cli-1.23.8.jar",
        R,
    ),
    (
        "detekt_detekt-7625",
        "https://proxy.example/https://repo1.maven.org/maven2/io/gitlab/arturbosch/detekt/detekt-cli/1.23.8/detekt-cli-1.23.8.jar",
        R,
    ),
]
GITHUB = [  # the upstream repository, every way GitHub and its mirrors serve it
    ("pinterest_ktlint-2029", "https://github.com/pinterest/ktlint/archive/refs/tags/0.50.0.zip", R),
    ("pinterest_ktlint-2029", "https://codeload.github.com/pinterest/ktlint/zip/refs/heads/master", R),
    (
        "pinterest_ktlint-2029",
        "https://raw.githubusercontent.com/pinterest/ktlint/master/build.gradle.kts",
        R,
    ),
    ("pinterest_ktlint-2029", "https://api.github.com/repos/pinterest/ktlint/tarball/0.50.0", R),
    ("pinterest_ktlint-2029", "https://github.com/pinterest/ktlint.git/info/refs?service=git-upload-pack", R),
    ("pinterest_ktlint-2029", "https://jitpack.io/com/github/pinterest/ktlint/0.50.0/ktlint-0.50.0.jar", R),
    ("pinterest_ktlint-2029", "https://jitpack.io/com/github/pinterest/ktlint/maven-metadata.xml", R),
    ("pinterest_ktlint-2029", "https://jitpack.io/api/builds/com.github.pinterest/ktlint/latest", R),
    ("pinterest_ktlint-2029", "https://cdn.jsdelivr.net/gh/pinterest/ktlint@0.50.0/README.md", R),
    ("pinterest_ktlint-2029", "https://proxy.example/github.com/Pinterest/KTLINT.git/info/refs", R),
    ("pinterest_ktlint-2029", "https://proxy.example/get?repo=https://github.com/pinterest/ktlint", R),
    (
        "pinterest_ktlint-2029",
        "https://api.github.com/search/code?q=repo:pinterest/ktlint+filename:Foo.kt",
        R,
    ),
    ("pinterest_ktlint-2029", "https://github.com/pinterest/other", OK),
    ("pinterest_ktlint-2029", "https://github.com/gradle/gradle/releases", OK),
    (
        "linreal_cascade-editor-16",
        f"{CENTRAL}/io/github/linreal/cascade-editor/maven-metadata.xml",
        OK,
    ),  # Central, not jitpack
    (
        "linreal_cascade-editor-16",
        "https://jitpack.io/io/github/linreal/cascade-editor/1.0.0/cascade-editor-1.0.0.jar",
        R,
    ),
]
MARKET = "https://plugins.jetbrains.com"
NAMES_OF_THE_PROJECT = [  # former coordinates, plugin ids, Marketplace ids, carriers, GitHub names and ids
    ("pinterest_ktlint-2029", f"{CENTRAL}/com/github/shyiko/ktlint/0.31.0/ktlint-0.31.0.jar", OK),  # former
    ("pinterest_ktlint-2029", f"{CENTRAL}/com/github/shyiko/ktlint/maven-metadata.xml", OK),
    ("pinterest_ktlint-2029", "https://github.com/shyiko/ktlint/archive/0.31.0.zip", R),  # a former name
    (
        "pinterest_ktlint-2029",
        "https://github.com/ktlint/ktlint/archive/refs/heads/master.zip",
        R,
    ),  # moved to
    ("pinterest_ktlint-2029", "https://jitpack.io/com/github/shyiko/ktlint/0.30.0/ktlint-0.30.0.jar", R),
    ("pinterest_ktlint-2029", "https://jitpack.io/io/github/shyiko/ktlint/0.30.0/ktlint-0.30.0.jar", R),
    (
        "pinterest_ktlint-2029",
        "https://api.github.com/repositories/52434581/tarball",
        R,
    ),  # id unknown: fail closed
    # detekt-formatting bundles ktlint: the carried version decides
    (
        "pinterest_ktlint-2029",
        f"{DETEKT}/detekt-formatting/1.23.0/detekt-formatting-1.23.0.jar",
        OK,
    ),  # 0.49.1
    ("pinterest_ktlint-2029", f"{DETEKT}/detekt-formatting/1.23.8/detekt-formatting-1.23.8.jar", R),  # 0.50.0
    (
        "pinterest_ktlint-2029",
        f"{DETEKT}/detekt-formatting/9.0.0/detekt-formatting-9.0.0.jar",
        R,
    ),  # unmapped, newer
    ("pinterest_ktlint-2029", f"{DETEKT}/detekt-formatting/LATEST/detekt-formatting-LATEST.jar", R),
    ("square_okhttp-6887", "https://api.github.com/repositories/5152285/tarball/parent-5.0.0-alpha.3", R),
    ("square_okhttp-6887", "https://api.github.com/repositories/1234/tarball", OK),  # another repository
    (
        "square_okhttp-6887",
        "https://github.com/lysine-dev/okhttp/archive/refs/heads/master.zip",
        R,
    ),  # moved to
    (
        "square_okhttp-6887",
        f"{CENTRAL}/com/squareup/okhttp/okhttp/2.7.5/okhttp-2.7.5.jar",
        OK,
    ),  # former group
    (
        "Hannah-Sten_TeXiFy-IDEA-3530",
        f"{MARKET}/plugin/download?pluginId=nl.rubensten.texifyidea&version=0.9.5",
        R,
    ),
    (
        "Hannah-Sten_TeXiFy-IDEA-3530",
        f"{MARKET}/plugin/download?pluginId=nl.rubensten.texifyidea&version=0.9.4",
        OK,
    ),
    ("Hannah-Sten_TeXiFy-IDEA-3530", f"{MARKET}/plugin/download?updateId=512345", R),
    (
        "Hannah-Sten_TeXiFy-IDEA-3530",
        f"{MARKET}/pluginManager?action=download&id=nl.rubensten.texifyidea&build=IC-241.1",
        R,
    ),
    (
        "Hannah-Sten_TeXiFy-IDEA-3530",
        "https://downloads.marketplace.jetbrains.com/files/9473/512345/TeXiFy-IDEA-0.9.4.zip",
        R,
    ),
    ("Hannah-Sten_TeXiFy-IDEA-3530", f"{MARKET}/api/plugins/9473/updates", OK),  # a listing of updates
    (
        "Hannah-Sten_TeXiFy-IDEA-3530",
        f"{MARKET}/maven/com/jetbrains/plugins/nl.rubensten.texifyidea/0.9.5/nl.rubensten.texifyidea-0.9.5.zip",
        R,
    ),
    (
        "Hannah-Sten_TeXiFy-IDEA-3530",
        f"{MARKET}/maven/alpha/com/jetbrains/plugins/nl.rubensten.texifyidea/0.9.5-alpha.10/nl.rubensten.texifyidea-0.9.5-alpha.10.zip",
        R,
    ),
    ("Hannah-Sten_TeXiFy-IDEA-3530", "https://github.com/Ruben-Sten/TeXiFy-IDEA/archive/master.zip", R),
    ("GradleUp_shadow-1313", "https://plugins.gradle.org/plugin/com.gradleup.shadow/9.0.0-beta11", R),
    (
        "GradleUp_shadow-1313",
        "https://plugins.gradle.org/plugin/com.gradleup.shadow",
        OK,
    ),  # the plugin's page
    (
        "GradleUp_shadow-1313",
        f"{PORTAL}/com/github/johnrengelman/shadow/com.github.johnrengelman.shadow.gradle.plugin/8.1.1/com.github.johnrengelman.shadow.gradle.plugin-8.1.1.pom",
        OK,
    ),
    ("GradleUp_shadow-1313", "https://github.com/johnrengelman/shadow/archive/main.zip", R),
    ("detekt_detekt-7625", "https://plugins.gradle.org/plugin/io.gitlab.arturbosch.detekt/1.23.8", R),
    (
        "detekt_detekt-7625",
        "https://plugins.gradle.org/api/gradle/8.10/plugin/use/io.gitlab.arturbosch.detekt/1.23.7",
        OK,
    ),  # a need
    (
        "detekt_detekt-7625",
        f"{CENTRAL}/io/github/detekt/detekt-compiler-plugin/2.0.21-1.23.8/detekt-compiler-plugin-2.0.21-1.23.8.jar",
        R,
    ),
    (
        "detekt_detekt-7625",
        f"{CENTRAL}/io/github/detekt/detekt-compiler-plugin/1.9.0-1.23.0/detekt-compiler-plugin-1.9.0-1.23.0.jar",
        OK,
    ),
    ("detekt_detekt-7625", "https://github.com/arturbosch/detekt/archive/main.zip", R),
    ("Kotlin_dataframe-1072", "https://github.com/JetBrains/dataframe/archive/master.zip", R),
    ("Kotlin_dataframe-1072", "https://codeload.github.com/nikitinas/dataframe/zip/refs/heads/master", R),
]
HONEST = [  # what builds ask for: never retrieval
    ("detekt_detekt-7625", f"{DETEKT}/detekt-cli/maven-metadata.xml", OK),
    ("detekt_detekt-7625", f"{DETEKT}/detekt-cli/maven-metadata.xml.sha1", OK),
    ("detekt_detekt-7625", f"{DETEKT}/detekt-cli/1.23.8/", OK),  # a listing
    ("detekt_detekt-7625", f"{DETEKT}/detekt-cli/", OK),
    (
        "detekt_detekt-7625",
        f"{CENTRAL}/org/jetbrains/kotlin/kotlin-stdlib/2.0.21/kotlin-stdlib-2.0.21.jar",
        OK,
    ),
    (
        "detekt_detekt-7625",
        f"{CENTRAL}/com/pinterest/ktlint/ktlint-rule-engine/1.3.1/ktlint-rule-engine-1.3.1.jar",
        OK,
    ),
    ("detekt_detekt-7625", "https://services.gradle.org/distributions/gradle-8.10-bin.zip", OK),
    (
        "detekt_detekt-7625",
        f"{PORTAL}/com/gradle/develocity/com.gradle.develocity.gradle.plugin/3.18/com.gradle.develocity.gradle.plugin-3.18.pom",
        OK,
    ),
    ("square_okhttp-6887", f"{CENTRAL}/com/squareup/okio/okio/3.0.0/okio-3.0.0.jar", OK),
    (
        "ankidroid_Anki-Android-18903",
        "https://dl.google.com/android/maven2/com/android/tools/build/gradle/8.7.0/gradle-8.7.0.jar",
        OK,
    ),
]
TABLE = BASE_BUILD + AFTER_THE_BASE + UNPLACED + QUERIES + FORMS + GITHUB + NAMES_OF_THE_PROJECT + HONEST


@pytest.mark.parametrize(("task", "url", "expected"), TABLE, ids=[f"{t}:{u}" for t, u, _ in TABLE])
def test_real_tasks_urls_of_every_class(task: str, url: str, expected: str) -> None:
    verdict = classify(url, facts_of(task))
    assert (R if verdict.retrieval else OK) == expected, verdict


def test_every_real_task_base_build_need_is_ok_in_the_usual_forms(capsys: pytest.CaptureFixture[str]) -> None:
    """Every need of every real task's base build, as Central, the plugin portal, plugins-artifacts and a
    Gradle plugin marker serve it, is `ok` (`kotlin-bench egress classify` on all of them exits 0)."""
    urls_by_task: dict[str, list[str]] = {}
    for task in BENCHMARK.tasks:
        urls = urls_by_task.setdefault(task.id, [])
        for need in task.base_build:
            group, artifact, version = need.coordinate.group, need.coordinate.artifact, need.version
            path = f"{group.replace('.', '/')}/{artifact}/{version}/{artifact}-{version}"
            urls += [f"{CENTRAL}/{path}.jar", f"{CENTRAL}/{path}.pom", f"{PORTAL}/{path}.module"]
            urls.append(
                f"https://plugins-artifacts.gradle.org/{group}/{artifact}/{version}/0a1b2c/{artifact}-{version}.jar"
            )
    assert sum(map(len, urls_by_task.values())) > 1000  # the spec states the needs (issue 36, item 1)
    for task_id, urls in urls_by_task.items():
        facts = facts_of(task_id)
        flagged = [(u, str(v)) for u in urls if (v := classify(u, facts)).retrieval]
        assert flagged == [], task_id
    detekt = urls_by_task["detekt_detekt-7625"]
    args = ["--root", str(REPO), "egress", "classify", "--spec", str(SPEC), "--task", "detekt_detekt-7625"]
    assert main([*args, *detekt]) == 0
    assert capsys.readouterr().out.count("ok: ") == len(detekt)


@pytest.mark.parametrize(
    ("task", "needs"),
    [("detekt_detekt-7625", {"1.23.7"}), ("Kotlin_dataframe-1072", {"0.16.0-dev-5772"})],
)
def test_the_spec_states_the_base_builds_named_in_issue_36(task: str, needs: set[str]) -> None:
    spec = BENCHMARK.task(task)
    assert {n.version for n in spec.base_build} == needs
    assert all(n.source and "@" in n.source for n in spec.base_build)


def test_the_fixs_releases_include_the_backports() -> None:
    assert BENCHMARK.task("detekt_detekt-7625").fix_releases == ("2.0.0-alpha.0", "1.23.8")
    assert BENCHMARK.task("detekt_detekt-7212").fix_releases == ("2.0.0-alpha.0", "1.23.7")
    assert BENCHMARK.task("square_okhttp-6887").fix_releases == ("5.0.0-alpha.3",)


# --- the examples' stand-in facts ------------------------------------------------------------------

CALC = Facts(
    coordinates=("examples:calc",),
    base_version="1.0.1-SNAPSHOT",
    fix_releases=("1.1.0",),
    upstream="https://example.invalid/examples/calc",
)
M2 = "https://repo.examples.test/maven2"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (f"{M2}/examples/calc/1.1.0/calc-1.1.0-sources.jar", R),
        (f"{M2}/examples/calc/1.1.0/calc-1.1.0.jar.asc", R),
        (f"{M2}/examples/calc/1.0.1-SNAPSHOT/calc-1.0.1-20260101.101010-1.jar", R),  # the base's own snapshot
        (f"{M2}/examples/calc/1.0.2/calc-1.0.2.aar", R),  # after the base, before the fix's release
        (
            "https://cache.example/example.invalid/examples/calc/archive/main.zip",
            R,
        ),  # the upstream repository
        ("https://api.github.com/repositories/123456/tarball", OK),  # the upstream is not on GitHub
        (f"{M2}/examples/calc/maven-metadata.xml", OK),
        (f"{M2}/examples/calc/1.0.1-SNAPSHOT/maven-metadata.xml", OK),
        (f"{M2}/examples/calc/1.1.0", OK),
        (f"{M2}/examples/calc/1.0.0/calc-1.0.0-sources.jar", OK),
        (f"{M2}/examples/slug/1.1.0/slug-1.1.0-sources.jar", OK),  # another project of the same group
        (f"{M2}/calc/1.1.0/calc-1.1.0.jar", OK),  # no group: not these coordinates
    ],
)
def test_the_examples_facts(url: str, expected: str) -> None:
    verdict = classify(url, CALC)
    assert (R if verdict.retrieval else OK) == expected, verdict


def test_the_examples_spec_gives_the_stand_in_facts() -> None:
    examples = load_dataset(REPO / "examples" / "dataset.json")
    for task in examples.tasks:
        facts = task.retrieval_facts()
        name = task.repository.repo
        release = f"{M2}/examples/{name}/{task.fix_release}/{name}-{task.fix_release}-sources.jar"
        base = f"{M2}/examples/{name}/{task.base_version}/{name}-{task.base_version}-sources.jar"
        assert classify(release, facts).retrieval and not classify(base, facts).retrieval, task.id


# --- every name of the project, on a made-up project whose facts hold every shape -------------------

NAMES = Facts(  # the shapes the spec's facts take (dataset/artifacts.py), with a known GitHub id
    coordinates=("org.acme.lint", "com.github.olduser:acme-lint"),  # current, and former coordinates
    plugin_ids=("org.acme.lint",),
    marketplace=(retrieval.Marketplace("org.acme.lint.idea", 4242),),
    carriers=(retrieval.Carrier("com.other:formatter-rules", (("2.0.0", "1.4.0"), ("2.1.0", "1.6.0"))),),
    upstream="https://github.com/acme/lint",
    other_names=("olduser/acme-lint",),
    github_id=987654,
    base_version="1.5.0",
    fix_releases=("1.6.0",),
    base_build=(retrieval.Need("org.acme.lint:acme-gradle-plugin", "1.5.1"),),
)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        # former coordinates, the plugin portal, markers
        (f"{CENTRAL}/com/github/olduser/acme-lint/1.2.0/acme-lint-1.2.0.jar", OK),
        (f"{CENTRAL}/com/github/olduser/acme-lint/1.6.0/acme-lint-1.6.0.jar", R),
        (f"{CENTRAL}/com/github/olduser/acme-lint/maven-metadata.xml", OK),
        ("https://plugins.gradle.org/plugin/org.acme.lint/1.6.0", R),
        ("https://plugins.gradle.org/plugin/org.acme.lint/1.4.0", OK),
        ("https://plugins.gradle.org/plugin/org.acme.lint", OK),  # the plugin's page: no version
        ("https://plugins.gradle.org/api/gradle/8.5/plugin/use/org.acme.lint/1.6.0", R),
        (
            f"{PORTAL}/org/acme/lint/org.acme.lint.gradle.plugin/1.6.0/org.acme.lint.gradle.plugin-1.6.0.pom",
            R,
        ),
        (f"{PORTAL}/org/acme/lint/acme-gradle-plugin/1.5.1/acme-gradle-plugin-1.5.1.jar", OK),  # a need
        # the Marketplace
        (f"{MARKET}/plugin/download?pluginId=org.acme.lint.idea&version=1.6.0", R),
        (f"{MARKET}/plugin/download?pluginId=org.acme.lint.idea&version=1.4.0", OK),
        (f"{MARKET}/plugin/download?updateId=123456", R),
        (f"{MARKET}/pluginManager?action=download&id=org.acme.lint.idea&build=IC-233.1", R),
        ("https://downloads.marketplace.jetbrains.com/files/4242/123456/acme-lint-1.4.0.zip", R),
        ("https://downloads.marketplace.jetbrains.com/files/9999/123456/other-1.0.zip", OK),
        (f"{MARKET}/api/plugins/4242/updates", OK),  # a listing of updates
        (f"{MARKET}/maven/com/jetbrains/plugins/org.acme.lint.idea/1.6.0/org.acme.lint.idea-1.6.0.zip", R),
        (
            f"{MARKET}/maven/eap/com/jetbrains/plugins/org.acme.lint.idea/1.6.0/org.acme.lint.idea-1.6.0.zip",
            R,
        ),
        (f"{MARKET}/maven/com/jetbrains/plugins/org.acme.lint.idea/1.4.0/org.acme.lint.idea-1.4.0.zip", OK),
        # carriers: the carried version decides
        (f"{CENTRAL}/com/other/formatter-rules/2.0.0/formatter-rules-2.0.0.jar", OK),  # carries 1.4.0
        (f"{CENTRAL}/com/other/formatter-rules/2.1.0/formatter-rules-2.1.0.jar", R),  # carries 1.6.0
        (f"{CENTRAL}/com/other/formatter-rules/1.9.0/formatter-rules-1.9.0.jar", OK),  # at most 2.0.0's 1.4.0
        (
            f"{CENTRAL}/com/other/formatter-rules/2.0.5/formatter-rules-2.0.5.jar",
            R,
        ),  # at most 2.1.0's: not known
        (
            f"{CENTRAL}/com/other/formatter-rules/3.0.0/formatter-rules-3.0.0.jar",
            R,
        ),  # newer than every mapped one
        (f"{CENTRAL}/com/other/formatter-rules/LATEST/formatter-rules-LATEST.jar", R),
        ("https://nexus.example/x?g=com.other&a=formatter-rules", R),
        (f"{CENTRAL}/com/other/formatter-core/9.0.0/formatter-core-9.0.0.jar", OK),  # not a carrier
        # GitHub under its former name and by numeric id
        ("https://github.com/olduser/acme-lint/archive/refs/heads/main.zip", R),
        ("https://jitpack.io/com/github/olduser/acme-lint/v1.6.0/acme-lint-v1.6.0.jar", R),
        ("https://api.github.com/repositories/987654/tarball/v1.6.0", R),
        ("https://api.github.com/repositories/111111/tarball/v1.0", OK),  # another repository
        (
            "https://objects.githubusercontent.com/github-production-release-asset-2e65be/987654/abcd?X-Amz-Algorithm=x",
            R,
        ),
        (
            "https://objects.githubusercontent.com/github-production-release-asset-2e65be/111111/abcd?X-Amz-Algorithm=x",
            OK,
        ),
        ("https://github-releases.githubusercontent.com/987654/abcd-ef01", R),
    ],
)
def test_every_name_of_the_project(url: str, expected: str) -> None:
    verdict = classify(url, NAMES)
    assert (R if verdict.retrieval else OK) == expected, verdict


def test_a_github_id_the_facts_do_not_know_fails_closed_for_a_github_project() -> None:
    unknown = Facts(upstream="https://github.com/acme/lint", base_version="1.0.0")
    assert classify("https://api.github.com/repositories/111111/tarball/v1.0", unknown).retrieval
    assert classify(
        "https://objects.githubusercontent.com/github-production-release-asset-2e65be/1/x", unknown
    ).retrieval
    assert not classify(
        "https://avatars.githubusercontent.com/u/111111?v=4", unknown
    ).retrieval  # a user's avatar
    off_github = Facts(upstream="https://gitlab.example/acme/lint", base_version="1.0.0")
    assert not classify("https://api.github.com/repositories/111111/tarball/v1.0", off_github).retrieval


def test_no_base_version_makes_every_version_retrieval_but_needs_stay_ok() -> None:
    facts = Facts(coordinates=("org.acme",), base_build=(retrieval.Need("org.acme:tool", "0.9.0"),))
    assert classify(f"{CENTRAL}/org/acme/lib/0.1.0/lib-0.1.0.jar", facts).retrieval
    assert not classify(f"{CENTRAL}/org/acme/tool/0.9.0/tool-0.9.0.jar", facts).retrieval
    assert not classify(f"{CENTRAL}/org/acme/lib/maven-metadata.xml", facts).retrieval


def test_coordinate_patterns() -> None:
    assert coordinate_matches("com.pinterest", "com.pinterest.ktlint", "ktlint-cli")
    assert not coordinate_matches("com.pinterest", "com.pinteresting", "x")
    assert coordinate_matches("org.jetbrains.kotlinx:dataframe*", "org.jetbrains.kotlinx", "dataframe-core")
    assert not coordinate_matches(
        "org.jetbrains.kotlinx:dataframe*", "org.jetbrains.kotlinx", "kotlinx-coroutines-core"
    )
    assert not coordinate_matches(
        "org.jetbrains.kotlinx:dataframe*", "org.jetbrains.kotlinx.sub", "dataframe"
    )
    assert coordinate_matches(
        "com.jetbrains.plugins:a.b", "nightly.com.jetbrains.plugins", "a.b"
    )  # a channel
    assert not coordinate_matches("com.squareup.okhttp3:okhttp", "com.squareup.okhttp3", "okhttp-sse")


# --- the command ------------------------------------------------------------------------------------


def test_the_classify_command(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--root", str(REPO), "egress", "classify", "--spec", str(SPEC), "--task", "detekt_detekt-7625"]
    assert main([*args, f"{DETEKT}/detekt-cli/1.23.8/detekt-cli-1.23.8-sources.jar"]) == 1
    assert capsys.readouterr().out.startswith("retrieval: io.gitlab.arturbosch.detekt:detekt-cli:1.23.8")
    assert main([*args, f"{DETEKT}/detekt-cli/1.23.7/detekt-cli-1.23.7.jar"]) == 0
    assert capsys.readouterr().out.startswith("ok: io.gitlab.arturbosch.detekt:detekt-cli:1.23.7")
    assert main([*args[:-1], "detekt_detekt-9999", "x"]) == 2
    assert "did you mean `detekt_detekt-" in capsys.readouterr().err


# --- properties ---------------------------------------------------------------------------------------

FACTS_JSON = [facts_of(t) for t in ("detekt_detekt-7625", "Kotlin_dataframe-1072")] + [NAMES, CALC]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(url=st.text(max_size=200), index=st.integers(0, len(FACTS_JSON) - 1))
def test_the_classifier_never_raises(url: str, index: int) -> None:
    for facts in (FACTS_JSON[index],):
        assert isinstance(classify(url, facts), retrieval.Verdict)
        assert isinstance(classify_request("h", url, facts), retrieval.Verdict)


SPELLED = [(t, u, e) for t, u, e in TABLE if "://" in u and not {"?", "#", ";", "\\"} & set(u)]


@settings(max_examples=300, deadline=None)
@given(case=st.sampled_from(SPELLED), mask=st.lists(st.integers(0, 2), min_size=1, max_size=300))
def test_percent_encoded_spellings_classify_alike(case: tuple[str, str, str], mask: list[int]) -> None:
    """Any character of the path percent-encoded once or twice (upper or lower hex) gives the same verdict."""
    task, url, expected = case
    scheme, _, rest = url.partition("://")
    host, _, path = rest.partition("/")
    spelled = []
    for i, char in enumerate(path):
        for _ in range(mask[i % len(mask)]):
            char = "".join(f"%{b:02X}" if i % 2 else f"%{b:02x}" for b in char.encode())
        spelled.append(char)
    verdict = classify(f"{scheme}://{host}/{''.join(spelled)}", facts_of(task))
    assert (R if verdict.retrieval else OK) == expected, (spelled, verdict)


def test_facts_survive_the_trip_to_the_proxy() -> None:
    for facts in FACTS_JSON:
        assert Facts.from_json(facts.to_json()) == facts
    assert Facts.from_json("{}") == Facts()


def test_the_copy_the_proxy_runs_needs_nothing_but_the_standard_library(tmp_path: Path) -> None:
    """retrieval.py and the modules it needs import only the standard library, and classify beside each
    other in a bare interpreter (-I: no site, no PYTHONPATH) as the proxy's container runs them."""
    assert {m.__name__ for m in retrieval.MODULES} == {
        "kotlin_bench.core.versions",
        "kotlin_bench.core.urlforms",
    }
    for module in (retrieval, *retrieval.MODULES):
        source = Path(module.__file__).read_text(encoding="utf-8")
        imported = {
            (n.module or "") if isinstance(n, ast.ImportFrom) else a.name
            for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Import | ast.ImportFrom)
            for a in n.names
        }
        outside = {m for m in imported if m.split(".")[0] not in sys.stdlib_module_names}
        assert outside <= {"kotlin_bench.core", "versions", "urlforms", "__future__"}, module.__name__
        (tmp_path / Path(module.__file__).name).write_text(source, encoding="utf-8")
    facts = facts_of("detekt_detekt-7625").to_json()
    script = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import retrieval\n"
        "facts = retrieval.Facts.from_json(sys.argv[2])\n"
        "print(retrieval.classify_request('repo1.maven.org', sys.argv[3], facts))\n"
    )
    path = "/maven2/io/gitlab/arturbosch/detekt/detekt-cli/1.23.8/detekt-cli-1.23.8.jar"
    out = subprocess.run(
        [sys.executable, "-I", "-c", script, str(tmp_path), facts, path],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.startswith("retrieval: io.gitlab.arturbosch.detekt:detekt-cli:1.23.8"), out.stderr
    assert json.loads(facts)["base_build"]


# --- the record's summary ---------------------------------------------------------------------------


def test_summary_and_rates_carry_the_egress_record() -> None:
    import pandas as pd

    from kotlin_bench.core.record import EgressSummary, RunKey, RunResult, Status
    from kotlin_bench.core.record_parts import Flag
    from kotlin_bench.results.stats import rates
    from kotlin_bench.results.summary import SUMMARY_COLUMNS, _typed, summary_row

    rows = []
    for task, flagged, record in (("t1", True, "urls"), ("t2", False, "urls"), ("t3", False, "hosts")):
        result = RunResult(RunKey(task, "examples/calc", "a", "script", None, 1))
        result.score(1.0)
        result.work.egress = EgressSummary(record, requests=3, bytes=300, refused=1, blocked=0)
        if flagged:
            result.work.flags[Flag.RETRIEVAL] = [f"{M2}/examples/calc/1.1.0/calc-1.1.0.jar"]
        rows.append(summary_row(result))
    assert [r["retrieval"] for r in rows] == [True, False, None]
    assert [r["egress_requests"] for r in rows] == [3, 3, None] and rows[0]["egress_refused"] == 1
    frame = _typed(pd.DataFrame(rows, columns=SUMMARY_COLUMNS))
    assert (frame["status"] == Status.RESOLVED).all()
    table = rates(frame)
    assert table.loc[0, "resolve_rate"] == 1.0 and table.loc[0, "retrieval_flagged"] == 1
    assert table.loc[0, "resolve_rate_without_retrieval"] == round(2 / 3, 4)


def test_headlines_and_reproduce_say_the_rate_without_retrieval_flagged_runs() -> None:
    import pandas as pd

    from kotlin_bench.results.report import retrieval_headlines, retrieval_note

    frame = pd.DataFrame(
        {
            "status": ["resolved", "resolved", "unresolved", "resolved"],
            "retrieval": [True, False, False, None],
        }
    )
    assert retrieval_note(frame) == (
        "1 of 3 recorded runs flagged as retrieval (the egress record): resolved 75.0%, "
        "50.0% counting them as unresolved"
    )
    assert retrieval_note(frame.assign(retrieval=None)) is None
    two = pd.concat([frame.assign(agent="a"), frame.assign(agent="b", retrieval=False)], ignore_index=True)
    assert retrieval_headlines(two) == [f"a: {retrieval_note(frame)}"]  # b has none flagged: no line
    assert retrieval_headlines(two.assign(retrieval=False)) == [
        "retrieval: none of 8 recorded runs flagged (the egress record)"
    ]
    assert retrieval_headlines(two.assign(retrieval=None)) == []
