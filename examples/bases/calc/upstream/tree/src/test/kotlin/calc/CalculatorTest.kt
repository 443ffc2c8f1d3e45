package calc

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Nested
import org.junit.jupiter.api.Test
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.CsvSource

class CalculatorTest {
    @Test
    fun `adds two numbers`() {
        assertEquals(5L, Calculator.evaluate("2 + 3"))
    }

    @Test
    fun `subtracts without spaces`() {
        assertEquals(2L, Calculator.evaluate("5-3"))
    }

    @Test
    fun `multiplication binds tighter than addition`() {
        assertEquals(14L, Calculator.evaluate("2 + 3 * 4"))
    }

    @Test
    fun `parentheses override precedence`() {
        assertEquals(20L, Calculator.evaluate("(2 + 3) * 4"))
    }

    @ParameterizedTest
    @CsvSource(
        "1 + 1, 2",
        "7 / 2, 3",
        "8 - 2 - 1, 5",
        "2 * (3 + 4) - 5, 9",
    )
    fun evaluates(expression: String, expected: Long) {
        assertEquals(expected, Calculator.evaluate(expression))
    }

    @Nested
    inner class Errors {
        @Test
        fun `rejects division by zero`() {
            val e = assertThrows(CalcException::class.java) { Calculator.evaluate("1 / 0") }
            assertEquals(2, e.position)
        }

        @Test
        fun `rejects a dangling operator`() {
            assertThrows(CalcException::class.java) { Calculator.evaluate("1 +") }
        }

        @Test
        fun `rejects an unclosed parenthesis`() {
            val e = assertThrows(CalcException::class.java) { Calculator.evaluate("(1 + 2") }
            assertEquals(6, e.position)
        }
    }
}
