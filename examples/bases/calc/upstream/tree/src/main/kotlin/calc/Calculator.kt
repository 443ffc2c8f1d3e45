package calc

object Calculator {
    /** Evaluates an integer expression such as `"2 + 3 * (4 - 1)"`. */
    fun evaluate(expression: String): Long = Parser(Lexer.tokenize(expression)).parse()
}
