package slug

object Slugifier {
    private val nonWord = Regex("[^a-z0-9]+")

    /**
     * Lower-cases [text], keeps its ASCII letters and digits and joins the words with [separator].
     * The result is at most [maxLength] characters long, cut at a word boundary when possible.
     */
    fun slugify(text: String, separator: String = "-", maxLength: Int = Int.MAX_VALUE): String {
        require(separator.isNotEmpty()) { "separator must not be empty" }
        require(maxLength > 0) { "maxLength must be positive, was $maxLength" }
        val words = text.lowercase().split(nonWord).filter { it.isNotEmpty() }
        return truncate(words, separator, maxLength)
    }

    private fun truncate(words: List<String>, separator: String, maxLength: Int): String {
        val out = StringBuilder()
        for (word in words) {
            val extra = if (out.isEmpty()) word.length else separator.length + word.length
            if (out.length + extra > maxLength) {
                if (out.isEmpty()) out.append(word, 0, maxLength)
                break
            }
            if (out.isNotEmpty()) out.append(separator)
            out.append(word)
        }
        return out.toString()
    }
}
