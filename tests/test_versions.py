"""The order of versions as Maven and Gradle publish it (`kotlin_bench.core.versions`), tested against their
published rules and examples, and the versions neither can place.

Maven's cases are the version strings of Maven's own ComparableVersion tests
(apache/maven: compat/maven-artifact/src/test/java/org/apache/maven/artifact/versioning/ComparableVersionTest.java,
the lists VERSIONS_QUALIFIER and VERSIONS_NUMBER, testVersionsEqual, testVersionComparing, testMng5568,
testMng6572, testMng6964, testMng7644, testMng7714 ...) and the examples of the POM reference's "Version Order
Specification" (https://maven.apache.org/pom.html#version-order-specification). Where the two disagree
(the reference says `1-sp-1 < 1-ga-1`; ComparableVersion orders `ga` as the release but does not drop it:
testVersionsHaveSameOrderButAreNotEqual), the implementation's tests win: it is what Maven does.

Gradle's cases are the examples of the user guide's "Version ordering"
(https://docs.gradle.org/current/userguide/dependency_versions.html#sec:version-ordering; also in
https://docs.gradle.org/8.2/userguide/single_versions.html).
"""

from __future__ import annotations

import itertools

import pytest

from kotlin_bench.core.versions import (
    asks_newest,
    at_or_before,
    development,
    gradle_compare,
    maven_compare,
    unplaced,
)

# ComparableVersionTest: each list is in ascending order
MAVEN_QUALIFIERS = [
    "1-alpha2snapshot", "1-alpha2", "1-alpha-123", "1-beta-2", "1-beta123", "1-m2", "1-m11", "1-rc", "1-cr2",
    "1-rc123", "1-SNAPSHOT", "1", "1-sp", "1-sp2", "1-sp123", "1-abc", "1-def", "1-pom-1", "1-1-snapshot",
    "1-1", "1-2", "1-123",
]  # fmt: skip
MAVEN_NUMBERS = [
    "2.0", "2.0.a", "2-1", "2.0.2", "2.0.123", "2.1.0", "2.1-a", "2.1b", "2.1-c", "2.1-1", "2.1.0.1", "2.2",
    "2.123", "11.a2", "11.a11", "11.b2", "11.b11", "11.m2", "11.m11", "11", "11.a", "11b", "11c", "11m",
]  # fmt: skip
MAVEN_EQUAL = [
    # testVersionsEqual
    ("1", "1"), ("1", "1.0"), ("1", "1.0.0"), ("1.0", "1.0.0"), ("1", "1-0"), ("1", "1.0-0"), ("1.0", "1.0-0"),
    ("1a", "1-a"), ("1a", "1.0-a"), ("1a", "1.0.0-a"), ("1.0a", "1-a"), ("1.0.0a", "1-a"), ("1x", "1-x"),
    ("1x", "1.0-x"), ("1x", "1.0.0-x"), ("1.0x", "1-x"), ("1.0.0x", "1-x"), ("1cr", "1rc"),
    ("1a1", "1-alpha-1"), ("1b2", "1-beta-2"), ("1m3", "1-milestone-3"),
    ("1X", "1x"), ("1A", "1a"), ("1B", "1b"), ("1M", "1m"), ("1Cr", "1Rc"), ("1cR", "1rC"), ("1m3", "1Milestone3"),
    ("1m3", "1MileStone3"), ("1m3", "1MILESTONE3"),
    # testVersionsHaveSameOrderButAreNotEqual
    ("1ga", "1"), ("1release", "1"), ("1final", "1"), ("1Ga", "1"), ("1GA", "1"), ("1RELEASE", "1"),
    ("1RELeaSE", "1"), ("1Final", "1"), ("1FinaL", "1"), ("1FINAL", "1"),
    # testLexicographicASCIISortOrder, testCompareLowerCaseToUpperCase*, testLocaleIndependent
    ("1.0.0-alpha1", "1.0.0-ALPHA1"), ("1.a", "1.A"), ("1.é", "1.É"),
    ("1-abcdefghijklmnopqrstuvwxyz", "1-ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
    # the POM reference's examples
    ("1.foo", "1-foo"), ("1.ga", "1"), ("1-ga", "1"), ("1-0", "1"), ("1.0", "1"), ("1-a1", "1-alpha-1"),
    ("1.0-alpha1", "1.0-ALPHA1"),
]  # fmt: skip
MAVEN_LOWER = [
    # testVersionComparing
    ("1", "2"), ("1.5", "2"), ("1", "2.5"), ("1.0", "1.1"), ("1.1", "1.2"), ("1.0.0", "1.1"), ("1.0.1", "1.1"),
    ("1.1", "1.2.0"), ("1.0-alpha-1", "1.0"), ("1.0-alpha-1", "1.0-alpha-2"), ("1.0-alpha-1", "1.0-beta-1"),
    ("1.0-beta-1", "1.0-SNAPSHOT"), ("1.0-SNAPSHOT", "1.0"), ("1.0-alpha-1-SNAPSHOT", "1.0-alpha-1"),
    ("1.0", "1.0-1"), ("1.0-1", "1.0-2"), ("1.0.0", "1.0-1"), ("2.0-1", "2.0.1"), ("2.0.1-klm", "2.0.1-lmn"),
    ("2.0.1", "2.0.1-xyz"), ("2.0.1", "2.0.1-123"), ("2.0.1-xyz", "2.0.1-123"),
    # testLeadingZeroes, testDigitGreaterThanNonAscii, testDigitGreaterThanNonBmpCharacters,
    # testCompareDigitToLetter, testNonAsciiDigits, testLexicographicOrder
    ("0.7", "2"), ("0.2", "1.0.7"), ("é", "1"), ("\U0001d7e4", "1"), ("J", "7"), ("c", "7"), ("\u0668", "1"),
    ("\u0668", "9"), ("aardvark", "zebra"), ("zebra", "ζέβρα"),
    # testMng5568, testMng6572, testMng6964, testMng7714
    ("6.1.0rc3", "6.1.0"), ("6.1.0rc3", "6.1H.5-beta"), ("6.1.0", "6.1H.5-beta"),
    ("20190126.230843", "1234567890.12345"), ("1234567890.12345", "123456789012345.1H.5-beta"),
    ("123456789012345.1H.5-beta", "12345678901234567890.1H.5-beta"),
    ("1-0.alpha", "1"), ("1-0.beta", "1"), ("1-0.alpha", "1-0.beta"),
    ("1.0.final-redhat", "1.0-sp1-redhat"), ("1.0.final-redhat", "1.0-sp-1-redhat"),
    ("1.0.final-redhat", "1.0-sp.1-redhat"),
    # the POM reference's examples
    ("1", "1.1"), ("1-snapshot", "1"), ("1", "1-sp"), ("1-foo2", "1-foo10"), ("1-foo", "1-1"), ("1-1", "1.1"),
    ("1-ga", "1-sp"), ("1-ga.1", "1-sp.1"), ("1.K", "1.7"), ("5.aardvark", "5.zebra"), ("1.b", "1.\u03b1"),  # a Greek alpha
]  # fmt: skip
MNG_7644 = [
    "abc",
    "alpha",
    "a",
    "beta",
    "b",
    "def",
    "milestone",
    "m",
    "RC",
]  # 1.0.0.X1 < 1.0.0-X2, 2-X == 2.0.X


@pytest.mark.parametrize("ordered", [MAVEN_QUALIFIERS, MAVEN_NUMBERS], ids=["qualifiers", "numbers"])
def test_maven_orders_comparableversions_lists(ordered: list[str]) -> None:
    wrong = [
        (low, high)
        for low, high in itertools.combinations(ordered, 2)
        if not maven_compare(low, high) < 0 < maven_compare(high, low)
    ]
    assert wrong == []


def test_maven_equal_spellings() -> None:
    zeros = [("0" * k + "1", "1") for k in range(19)] + [("0" * k, "0") for k in range(1, 19)]  # MNG-6572
    wrong = [(a, b) for a, b in MAVEN_EQUAL + zeros if maven_compare(a, b) != 0 or maven_compare(b, a) != 0]
    assert wrong == []


def test_maven_orders_pairs() -> None:
    pairs = MAVEN_LOWER + [(f"1.0.0.{x}1", f"1.0.0-{x}2") for x in MNG_7644]
    wrong = [(a, b) for a, b in pairs if not maven_compare(a, b) < 0 < maven_compare(b, a)]
    assert wrong == []
    for x in MNG_7644:
        assert maven_compare(f"2-{x}", f"2.0.{x}") == 0 == maven_compare(f"2.0.{x}", f"2.0.0.{x}"), x


GRADLE_ASCENDING = [
    ["1.0-dev", "1.0-ALPHA", "1.0-alpha", "1.0-rc"],  # dev is lower than any other non-numeric part
    ["1.0-zeta", "1.0-rc", "1.0-snapshot", "1.0-final", "1.0-ga", "1.0-release", "1.0-sp", "1.0"],
    ["1.1", "1.2"],  # both numeric: the highest value is higher
    ["1.a", "1.1"],  # a numeric part is higher than a non-numeric one
    ["1.A", "1.B", "1.a", "1.b"],  # non-numeric parts compare alphabetically, case-sensitively
    ["1.1", "1.1.0"],  # an extra numeric part is higher, even when it is zero
    ["1.1.a", "1.1"],  # an extra non-numeric part is lower
]


@pytest.mark.parametrize("ordered", GRADLE_ASCENDING, ids=lambda o: " < ".join(o))
def test_gradle_orders_the_user_guides_examples(ordered: list[str]) -> None:
    wrong = [
        (low, high)
        for low, high in itertools.combinations(ordered, 2)
        if not gradle_compare(low, high) < 0 < gradle_compare(high, low)
    ]
    assert wrong == []


@pytest.mark.parametrize(
    ("a", "b"),
    [("1.a.1", "1-a+1"), ("1.a.1", "1.a-1"), ("1.a.1", "1a1"), ("1.0-RC-1", "1.0.rc.1"), ("1_0", "1.0")],
)
def test_gradle_ignores_separators_and_the_case_of_special_parts(a: str, b: str) -> None:
    assert gradle_compare(a, b) == 0 == gradle_compare(b, a)


@pytest.mark.parametrize(
    ("lower", "higher", "maven", "gradle"),
    [
        (
            "1.0.0-Beta4",
            "1.0.0-dev",
            -1,
            1,
        ),  # Gradle: dev is the lowest; Maven: an unknown qualifier, after beta
        ("0.14.0", "0.14.0-dev", -1, 1),  # Maven: after the release; Gradle: an extra non-numeric part
        ("1.0-alpha", "1.0-Beta", -1, 1),  # Gradle compares B before a
        ("1.1", "1.1.0", 0, -1),
    ],
)
def test_where_maven_and_gradle_disagree(lower: str, higher: str, maven: int, gradle: int) -> None:
    assert (maven_compare(lower, higher), gradle_compare(lower, higher)) == (maven, gradle)


@pytest.mark.parametrize(
    ("version", "base", "known"),
    [
        ("1.23.5", "1.23.6", True),
        ("1.23.6", "1.23.6", True),  # the base's own release
        ("1.23.7", "1.23.6", False),
        ("0.15.0", "0.16.0-dev", True),
        ("0.16.0-dev-5772", "0.16.0-dev", False),  # a dev build of the base's line: after it in both orders
        ("0.14.0", "0.14.0-dev", False),  # the orders disagree: not known
        ("1.0.0-Beta1", "1.0.0-dev", False),
        ("1.0.1-SNAPSHOT", "1.0.1-SNAPSHOT", False),  # a development base: its own name is rebuilt later
        ("1.0.0", "1.0.1-SNAPSHOT", True),
    ],
)
def test_at_or_before_needs_both_orders(version: str, base: str, known: bool) -> None:
    assert at_or_before(version, base) is known


@pytest.mark.parametrize(
    "version",
    ["main-SNAPSHOT", "LATEST", "RELEASE", "[RELEASE]", "latest.release", "latest.integration", "[0,)", "(,2.0]",
     "[1.0,2.0)", "]1.0,2.0[", "+", "1.+", "1.3.+", "v1.23.7", "", "  ", "1.0-eap", "1.0-foo", "1.0-b",
     "${detekt.version}", "1.0.*"],
)  # fmt: skip
def test_versions_no_order_can_place(version: str) -> None:
    assert unplaced(version) is not None


@pytest.mark.parametrize(
    "version",
    ["1.23.7", "2.0.0-alpha.0", "1.19.0-RC1", "0.16.0-dev-5772", "1.0.0-Beta1", "5.0.0-alpha.3", "9.0.0-beta11",
     "2.22.0beta2", "1.0-b2", "1.0-m1", "1.0.1-SNAPSHOT", "1.0-sp1", "1.0.GA", "1.0.Final", "3.0.RELEASE"],
)  # fmt: skip
def test_versions_both_orders_place(version: str) -> None:
    assert unplaced(version) is None


def test_newest_and_development() -> None:
    assert asks_newest("LATEST") and asks_newest("[1.0,)") and asks_newest("1.+") and not asks_newest("1.0")
    assert (
        development("1.0.1-SNAPSHOT") and development("0.16.0-dev") and development("1.0-20260101.101010-1")
    )
    assert not development("0.16.0-dev-5772") and not development("1.0.0")
