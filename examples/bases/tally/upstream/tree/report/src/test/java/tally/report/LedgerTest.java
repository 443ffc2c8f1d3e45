package tally.report;

import static org.junit.Assert.assertEquals;

import org.junit.Test;
import tally.Amount;

public class LedgerTest {
    @Test
    public void sumsEntries() {
        Ledger ledger = new Ledger().add("rent", "-800").add("salary", "2500.50");
        assertEquals(Amount.parse("1700.50"), ledger.total());
    }

    @Test
    public void emptyLedgerTotalsZero() {
        assertEquals(Amount.ZERO, new Ledger().total());
    }

    @Test
    public void keepsTheOrderOfEntries() {
        Ledger ledger = new Ledger().add("b", "1").add("a", "2");
        assertEquals("b", ledger.entries().get(0).label);
        assertEquals("a", ledger.entries().get(1).label);
    }

    @Test
    public void rejectsACommaInAnEntry() {
        try {
            new Ledger().add("coffee", "2,5");
        } catch (IllegalArgumentException expected) {
            return;
        }
        throw new AssertionError("2,5 was accepted");
    }
}
