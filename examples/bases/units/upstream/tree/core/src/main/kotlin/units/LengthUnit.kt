package units

/** A unit of length, with its symbol and its size in metres. */
enum class LengthUnit(val symbol: String, val metres: Double) {
    MILLIMETRE("mm", 0.001),
    CENTIMETRE("cm", 0.01),
    METRE("m", 1.0),
    KILOMETRE("km", 1000.0),
    INCH("in", 0.0254),
    FOOT("ft", 0.3048),
    YARD("yd", 0.9144),
    MILE("mi", 1609.344),
    ;

    companion object {
        /** The unit whose symbol is [symbol], e.g. `"km"`. */
        fun parse(symbol: String): LengthUnit =
            entries.firstOrNull { it.symbol == symbol } ?: throw IllegalArgumentException("unknown unit '$symbol'")
    }
}
