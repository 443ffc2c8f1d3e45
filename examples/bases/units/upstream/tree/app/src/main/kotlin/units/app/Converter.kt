package units.app

import units.Length
import units.LengthUnit

/** The `convert <value> <from> <to>` command line; returns the line to print. */
object Converter {
    const val USAGE = "usage: convert <value> <from> <to>"

    fun run(args: List<String>): String {
        if (args.size != 3) return USAGE
        val value = args[0].toDoubleOrNull() ?: return "error: '${args[0]}' is not a number"
        return try {
            val from = LengthUnit.parse(args[1])
            val to = LengthUnit.parse(args[2])
            Length(value, from).to(to).toString()
        } catch (e: IllegalArgumentException) {
            "error: ${e.message}"
        }
    }
}

fun main(args: Array<String>) {
    println(Converter.run(args.toList()))
}
