package units

data class Length(val value: Double, val unit: LengthUnit) {
    /** This length expressed in [target]. */
    fun to(target: LengthUnit): Length =
        if (target == unit) this else Length(value * unit.metres / target.metres, target)

    /** The sum, in the unit of the left operand. */
    operator fun plus(other: Length): Length = Length(value + other.to(unit).value, unit)

    override fun toString(): String = "$value ${unit.symbol}"
}
