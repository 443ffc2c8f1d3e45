package tally;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import org.junit.Test;

public class AmountTest {
    @Test
    public void parsesWholeAmounts() {
        assertEquals(1200, Amount.parse("12").cents());
    }

    @Test
    public void parsesDecimals() {
        assertEquals(1250, Amount.parse("12.5").cents());
        assertEquals(1205, Amount.parse("12.05").cents());
    }

    @Test
    public void parsesNegativeAmounts() {
        assertEquals(-75, Amount.parse("-0.75").cents());
        assertTrue(Amount.parse("-3").isNegative());
    }

    @Test
    public void rejectsTooManyDecimals() {
        assertThrows(IllegalArgumentException.class, () -> Amount.parse("1.005"));
    }

    @Test
    public void rejectsACommaAsDecimalSeparator() {
        assertThrows(IllegalArgumentException.class, () -> Amount.parse("1,5"));
    }

    @Test
    public void rejectsText() {
        assertThrows(IllegalArgumentException.class, () -> Amount.parse("twelve"));
    }

    @Test
    public void formatsTwoDecimals() {
        assertEquals("1234.50", Amount.ofCents(123450).toString());
        assertEquals("-0.05", Amount.ofCents(-5).toString());
    }

    @Test
    public void addsAndSubtracts() {
        assertEquals(Amount.parse("3.75"), Amount.parse("1.25").plus(Amount.parse("2.50")));
        assertEquals(Amount.parse("-1.25"), Amount.parse("1.25").minus(Amount.parse("2.50")));
    }
}
