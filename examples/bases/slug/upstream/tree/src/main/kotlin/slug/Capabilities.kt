package slug

/** What this version of the library can do; callers may check a flag before relying on a behaviour. */
object Capabilities {
    /** Letters with diacritics are replaced by their base letters ("é" becomes "e") instead of being dropped. */
    val transliteration: Boolean = false
}
