package tally.report;

import static org.junit.Assert.assertEquals;

import org.junit.Test;

public class TableTest {
    @Test
    public void printsTheTotalLast() {
        String table = new Ledger().add("rent", "-800").table();
        String[] lines = table.split("\n");
        assertEquals(2, lines.length);
        assertEquals(true, lines[1].startsWith("total"));
    }
}
