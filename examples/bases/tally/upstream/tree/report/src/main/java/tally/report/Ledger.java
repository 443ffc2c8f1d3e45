package tally.report;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import tally.Amount;

/** Entries (a label and an amount) in the order they were added, their total, and a printed table. */
public final class Ledger {
    public static final class Entry {
        public final String label;
        public final Amount amount;

        Entry(String label, Amount amount) {
            this.label = label;
            this.amount = amount;
        }
    }

    private final List<Entry> entries = new ArrayList<>();

    public Ledger add(String label, String amount) {
        entries.add(new Entry(label, Amount.parse(amount)));
        return this;
    }

    public List<Entry> entries() {
        return Collections.unmodifiableList(entries);
    }

    public Amount total() {
        Amount total = Amount.ZERO;
        for (Entry entry : entries) {
            total = total.plus(entry.amount);
        }
        return total;
    }

    /** One line per entry, then the total: {@code label amount}, separated by one space. */
    public String table() {
        StringBuilder out = new StringBuilder();
        for (Entry entry : entries) {
            out.append(entry.label).append(' ').append(entry.amount).append('\n');
        }
        out.append("total ").append(total()).append('\n');
        return out.toString();
    }
}
