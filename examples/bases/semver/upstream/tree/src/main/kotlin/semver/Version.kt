package semver

/** A semantic version: `MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]`. */
data class Version(
    val major: Int,
    val minor: Int,
    val patch: Int,
    val preRelease: List<String> = emptyList(),
    val build: List<String> = emptyList(),
) : Comparable<Version> {
    init {
        require(major >= 0 && minor >= 0 && patch >= 0) { "version numbers must not be negative" }
    }

    val isPreRelease: Boolean get() = preRelease.isNotEmpty()

    /** Precedence: major, then minor, then patch. Build metadata is ignored. */
    override fun compareTo(other: Version): Int =
        compareValuesBy(this, other, Version::major, Version::minor, Version::patch)

    override fun toString(): String = buildString {
        append(major).append('.').append(minor).append('.').append(patch)
        if (preRelease.isNotEmpty()) append('-').append(preRelease.joinToString("."))
        if (build.isNotEmpty()) append('+').append(build.joinToString("."))
    }

    companion object {
        private const val NUMBER = "(0|[1-9][0-9]*)"
        private const val IDENTIFIERS = "([0-9A-Za-z-]+(?:\\.[0-9A-Za-z-]+)*)"
        private val pattern = Regex("$NUMBER\\.$NUMBER\\.$NUMBER(?:-$IDENTIFIERS)?(?:\\+$IDENTIFIERS)?")

        /** Parses [text]; throws [IllegalArgumentException] when it is not a semantic version. */
        fun parse(text: String): Version {
            val match = pattern.matchEntire(text) ?: throw IllegalArgumentException("not a semantic version: '$text'")
            val (major, minor, patch, pre, build) = match.destructured
            val preRelease = if (pre.isEmpty()) emptyList() else pre.split('.')
            for (identifier in preRelease) {
                require(!(identifier.length > 1 && identifier[0] == '0' && identifier.all { it in '0'..'9' })) {
                    "numeric pre-release identifier with a leading zero: '$identifier' in '$text'"
                }
            }
            return Version(
                major.toInt(),
                minor.toInt(),
                patch.toInt(),
                preRelease,
                if (build.isEmpty()) emptyList() else build.split('.'),
            )
        }
    }
}
