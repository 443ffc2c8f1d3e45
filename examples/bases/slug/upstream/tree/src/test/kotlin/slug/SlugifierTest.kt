package slug

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assumptions.assumeTrue
import org.junit.jupiter.api.BeforeEach
import org.junit.jupiter.api.Nested
import org.junit.jupiter.api.Test
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.ValueSource

class SlugifierTest {
    @Test
    fun `lower-cases and joins words`() {
        assertEquals("hello-world", Slugifier.slugify("Hello, World!"))
    }

    @Test
    fun `keeps digits`() {
        assertEquals("top-10-tips-for-2024", Slugifier.slugify("Top 10 tips for 2024"))
    }

    @ParameterizedTest
    @ValueSource(strings = ["", "   ", "!!!", "--"])
    fun `returns an empty slug for text without words`(text: String) {
        assertEquals("", Slugifier.slugify(text))
    }

    @Nested
    inner class Separators {
        @Test
        fun `collapses runs of punctuation and spaces`() {
            assertEquals("a-b-c", Slugifier.slugify("a -- b ,; c"))
        }

        @Test
        fun `trims separators at both ends`() {
            assertEquals("title", Slugifier.slugify("  ...Title...  "))
        }

        @Test
        fun `accepts a custom separator`() {
            assertEquals("release_notes_v2", Slugifier.slugify("Release notes v2", separator = "_"))
        }

        @Test
        fun `rejects an empty separator`() {
            assertThrows(IllegalArgumentException::class.java) { Slugifier.slugify("x", separator = "") }
        }
    }

    @Nested
    inner class Truncation {
        @Test
        fun `cuts at a word boundary`() {
            assertEquals("the-quick", Slugifier.slugify("The quick brown fox", maxLength = 12))
        }

        @Test
        fun `cuts a single long word`() {
            assertEquals("suppercal", Slugifier.slugify("Suppercalifragilistic", maxLength = 9))
        }

        @Test
        fun `keeps a slug that fits exactly`() {
            assertEquals("one-two", Slugifier.slugify("one two", maxLength = 7))
        }
    }

    @Nested
    inner class Transliteration {
        @BeforeEach
        fun requireTransliteration() {
            assumeTrue(Capabilities.transliteration, "this version drops letters with diacritics")
        }

        @Test
        fun `folds accents in a whole sentence`() {
            assertEquals("creme-brulee-a-la-carte", Slugifier.slugify("Crème brûlée à la carte"))
        }
    }
}
