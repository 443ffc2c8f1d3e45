package calc

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Test

class LexerTest {
    private fun types(input: String) = Lexer.tokenize(input).map { it.type }

    @Test
    fun `splits numbers and operators`() {
        assertEquals(
            listOf(TokenType.NUMBER, TokenType.PLUS, TokenType.LPAREN, TokenType.NUMBER, TokenType.RPAREN, TokenType.END),
            types("12 + (3)"),
        )
    }

    @Test
    fun `tokenizes subtraction without spaces`() {
        assertEquals(listOf(TokenType.NUMBER, TokenType.MINUS, TokenType.NUMBER, TokenType.END), types("10-4"))
    }

    @Test
    fun `records token positions`() {
        assertEquals(listOf(0, 3, 5, 7), Lexer.tokenize("42 * 7 ").map { it.position })
    }

    @Test
    fun `rejects unknown characters`() {
        val e = assertThrows(CalcException::class.java) { Lexer.tokenize("1 % 2") }
        assertEquals(2, e.position)
    }
}
