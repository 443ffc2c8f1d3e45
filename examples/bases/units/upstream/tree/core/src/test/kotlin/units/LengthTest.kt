package units

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertSame
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Test
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.EnumSource

class LengthTest {
    @Test
    fun `converts feet to metres`() {
        assertEquals(3.6576, Length(12.0, LengthUnit.FOOT).to(LengthUnit.METRE).value, 1e-9)
    }

    @Test
    fun `converts miles to kilometres`() {
        assertEquals(1.609344, Length(1.0, LengthUnit.MILE).to(LengthUnit.KILOMETRE).value, 1e-9)
    }

    @Test
    fun `adds lengths in different units`() {
        val sum = Length(1.0, LengthUnit.METRE) + Length(50.0, LengthUnit.CENTIMETRE)
        assertEquals(LengthUnit.METRE, sum.unit)
        assertEquals(1.5, sum.value, 1e-12)
    }

    @Test
    fun `converting to the same unit returns the same length`() {
        val length = Length(7.0, LengthUnit.YARD)
        assertSame(length, length.to(LengthUnit.YARD))
    }

    @ParameterizedTest
    @EnumSource(LengthUnit::class)
    fun `parses every symbol`(unit: LengthUnit) {
        assertEquals(unit, LengthUnit.parse(unit.symbol))
    }

    @Test
    fun `rejects unknown symbols`() {
        val e = assertThrows(IllegalArgumentException::class.java) { LengthUnit.parse("parsec") }
        assertEquals("unknown unit 'parsec'", e.message)
    }
}
