package tally;

/** An amount of money, exact to the cent. */
public final class Amount implements Comparable<Amount> {
    public static final Amount ZERO = new Amount(0);

    private final long cents;

    private Amount(long cents) {
        this.cents = cents;
    }

    public static Amount ofCents(long cents) {
        return new Amount(cents);
    }

    /**
     * Parses a decimal amount such as {@code 12}, {@code 12.5}, {@code -0.75}: an optional minus sign,
     * digits, and at most two decimals after a point.
     */
    public static Amount parse(String text) {
        String s = text.trim();
        boolean negative = s.startsWith("-");
        if (negative) {
            s = s.substring(1);
        }
        int point = s.indexOf('.');
        String whole = point < 0 ? s : s.substring(0, point);
        String fraction = point < 0 ? "" : s.substring(point + 1);
        if (whole.isEmpty() || !digits(whole) || !digits(fraction) || fraction.length() > 2
                || (point >= 0 && fraction.isEmpty())) {
            throw new IllegalArgumentException("not an amount: '" + text + "'");
        }
        long cents = Long.parseLong(whole) * 100;
        if (!fraction.isEmpty()) {
            cents += Long.parseLong(fraction.length() == 1 ? fraction + "0" : fraction);
        }
        return new Amount(negative ? -cents : cents);
    }

    private static boolean digits(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (!Character.isDigit(s.charAt(i))) {
                return false;
            }
        }
        return true;
    }

    public long cents() {
        return cents;
    }

    public Amount plus(Amount other) {
        return new Amount(Math.addExact(cents, other.cents));
    }

    public Amount minus(Amount other) {
        return new Amount(Math.subtractExact(cents, other.cents));
    }

    public boolean isNegative() {
        return cents < 0;
    }

    @Override
    public int compareTo(Amount other) {
        return Long.compare(cents, other.cents);
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof Amount && ((Amount) other).cents == cents;
    }

    @Override
    public int hashCode() {
        return Long.hashCode(cents);
    }

    /** Two decimals, a minus sign when negative: {@code -1234.50}. */
    @Override
    public String toString() {
        long abs = Math.abs(cents);
        return (cents < 0 ? "-" : "") + abs / 100 + "." + String.format("%02d", abs % 100);
    }
}
