package semver

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Disabled
import org.junit.jupiter.api.Nested
import org.junit.jupiter.api.Test
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.CsvSource
import org.junit.jupiter.params.provider.ValueSource

class VersionTest {
    private fun v(text: String) = Version.parse(text)

    @Test
    fun `prints the canonical form`() {
        assertEquals("1.2.3-beta.1+exp.sha.5114f85", v("1.2.3-beta.1+exp.sha.5114f85").toString())
    }

    @Nested
    inner class Parsing {
        @Test
        fun `parses major minor and patch`() {
            assertEquals(Version(10, 20, 30), v("10.20.30"))
        }

        @Test
        fun `parses pre-release identifiers`() {
            val version = v("1.0.0-alpha.1.x-y")
            assertEquals(listOf("alpha", "1", "x-y"), version.preRelease)
            assertTrue(version.isPreRelease)
        }

        @Test
        fun `keeps build metadata apart`() {
            val version = v("1.0.0+20240101.sha-5114f85")
            assertEquals(listOf("20240101", "sha-5114f85"), version.build)
            assertFalse(version.isPreRelease)
        }

        @ParameterizedTest
        @ValueSource(strings = ["1.2", "01.2.3", "1.2.3-", "1.2.3-01", "v1.2.3", "1.2.3+", "1.2.3-alpha..1"])
        fun `rejects malformed versions`(text: String) {
            assertThrows(IllegalArgumentException::class.java) { v(text) }
        }

        @Test
        @Disabled("loose versions such as 'v1.2' are not supported yet")
        fun `parses loose versions`() {
            assertEquals(Version(1, 2, 0), v("v1.2"))
        }
    }

    @Nested
    inner class Ordering {
        @Test
        fun `orders by major then minor then patch`() {
            val sorted = listOf("2.0.0", "1.10.0", "1.9.0", "1.9.1").map(::v).sorted().map { it.toString() }
            assertEquals(listOf("1.9.0", "1.9.1", "1.10.0", "2.0.0"), sorted)
        }

        @Test
        fun `ignores build metadata when comparing`() {
            assertEquals(0, v("1.0.0+build.1").compareTo(v("1.0.0+build.2")))
            assertEquals(0, v("1.0.0-rc.1+a").compareTo(v("1.0.0-rc.1+b")))
        }

        @ParameterizedTest
        @CsvSource(
            "1.0.0, 2.0.0, -1",
            "2.1.0, 2.0.9, 1",
            "3.4.5, 3.4.5, 0",
        )
        fun `compares release versions`(left: String, right: String, expected: Int) {
            assertEquals(expected, Integer.signum(v(left).compareTo(v(right))))
        }
    }
}
