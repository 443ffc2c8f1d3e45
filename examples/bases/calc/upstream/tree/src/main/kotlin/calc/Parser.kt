package calc

/**
 * Recursive-descent parser that evaluates while it parses.
 *
 *     expression := term (('+' | '-') term)*
 *     term       := factor (('*' | '/') factor)*
 *     factor     := NUMBER | '(' expression ')'
 */
class Parser(private val tokens: List<Token>) {
    private var pos = 0

    fun parse(): Long {
        val value = expression()
        expect(TokenType.END)
        return value
    }

    private fun peek(): Token = tokens[pos]

    private fun next(): Token = tokens[pos++]

    private fun expect(type: TokenType): Token {
        val token = peek()
        if (token.type != type) {
            throw CalcException("expected ${describe(type)} but found ${describe(token)}", token.position)
        }
        return next()
    }

    private fun expression(): Long {
        var value = term()
        while (peek().type == TokenType.PLUS || peek().type == TokenType.MINUS) {
            val op = next()
            val right = term()
            value = if (op.type == TokenType.PLUS) value + right else value - right
        }
        return value
    }

    private fun term(): Long {
        var value = factor()
        while (peek().type == TokenType.STAR || peek().type == TokenType.SLASH) {
            val op = next()
            val right = factor()
            value = if (op.type == TokenType.STAR) {
                value * right
            } else {
                if (right == 0L) throw CalcException("division by zero", op.position)
                value / right
            }
        }
        return value
    }

    private fun factor(): Long {
        val token = peek()
        return when (token.type) {
            TokenType.NUMBER -> next().text.toLong()
            TokenType.LPAREN -> {
                next()
                val value = expression()
                expect(TokenType.RPAREN)
                value
            }
            else -> throw CalcException("expected a number or '(' but found ${describe(token)}", token.position)
        }
    }

    private fun describe(type: TokenType): String = when (type) {
        TokenType.END -> "end of input"
        TokenType.RPAREN -> "')'"
        else -> type.name.lowercase()
    }

    private fun describe(token: Token): String =
        if (token.type == TokenType.END) "end of input" else "'${token.text}'"
}
