package calc

enum class TokenType { NUMBER, PLUS, MINUS, STAR, SLASH, LPAREN, RPAREN, END }

data class Token(val type: TokenType, val text: String, val position: Int)

/** Thrown for malformed input; [position] is the offset of the offending character. */
class CalcException(message: String, val position: Int) : RuntimeException("$message at position $position")

object Lexer {
    private val symbols = mapOf(
        '+' to TokenType.PLUS,
        '-' to TokenType.MINUS,
        '*' to TokenType.STAR,
        '/' to TokenType.SLASH,
        '(' to TokenType.LPAREN,
        ')' to TokenType.RPAREN,
    )

    fun tokenize(input: String): List<Token> {
        val tokens = mutableListOf<Token>()
        var i = 0
        while (i < input.length) {
            val c = input[i]
            when {
                c.isWhitespace() -> i++
                c.isDigit() -> {
                    val start = i
                    while (i < input.length && input[i].isDigit()) i++
                    tokens += Token(TokenType.NUMBER, input.substring(start, i), start)
                }
                else -> {
                    val type = symbols[c] ?: throw CalcException("unexpected character '$c'", i)
                    tokens += Token(type, c.toString(), i)
                    i++
                }
            }
        }
        tokens += Token(TokenType.END, "", input.length)
        return tokens
    }
}
