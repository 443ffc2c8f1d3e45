package units.app

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test

class ConverterTest {
    @Test
    fun `converts kilometres to metres`() {
        assertEquals("1000.0 m", Converter.run(listOf("1", "km", "m")))
    }

    @Test
    fun `prints the usage for a wrong number of arguments`() {
        assertEquals(Converter.USAGE, Converter.run(listOf("1", "km")))
    }

    @Test
    fun `reports an unknown unit`() {
        assertEquals("error: unknown unit 'parsec'", Converter.run(listOf("1", "parsec", "m")))
    }

    @Test
    fun `reports a value that is not a number`() {
        assertEquals("error: 'ten' is not a number", Converter.run(listOf("ten", "m", "ft")))
    }
}
