import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericArray;
import org.apache.paimon.data.GenericMap;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.format.FileFormat;
import org.apache.paimon.format.FormatReaderContext;
import org.apache.paimon.format.FormatReaderFactory;
import org.apache.paimon.format.FormatWriter;
import org.apache.paimon.format.FormatWriterFactory;
import org.apache.paimon.fs.Path;
import org.apache.paimon.fs.PositionOutputStream;
import org.apache.paimon.fs.local.LocalFileIO;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.RowType;

/**
 * Apache Paimon's Java Avro data files (its FileFormat "avro", as its table writers use it): one
 * file of ROWS rows of every column type Paimon stores in Avro, written or read. Prints one JSON
 * object: the seconds of each run, and for reads the row count and a checksum of every value (so
 * two files hold the same rows exactly when their checksums agree).
 *
 * <pre>
 * java -cp ... PaimonAvroFiles write FILE ROWS REPEATS   zstd at level 1, Paimon's default
 * java -cp ... PaimonAvroFiles read FILE REPEATS
 * </pre>
 *
 * Each phase runs REPEATS times in one JVM (the first run warms it up). Row i: see row(i).
 */
public final class PaimonAvroFiles {
    private static final long TS_BASE_MICROS = 1_704_067_200_000_000L; // 2024-01-01T00:00:00Z
    private static final long MIX = 1_000_003L;

    static final RowType ROW_TYPE =
            RowType.of(
                    new DataType[] {
                        DataTypes.BIGINT().notNull(),
                        DataTypes.BOOLEAN(),
                        DataTypes.INT(),
                        DataTypes.DOUBLE(),
                        DataTypes.FLOAT(),
                        DataTypes.STRING(),
                        DataTypes.BYTES(),
                        DataTypes.BIGINT(),
                        DataTypes.DATE(),
                        DataTypes.TIMESTAMP(6),
                        DataTypes.TIMESTAMP_WITH_LOCAL_TIME_ZONE(3),
                        DataTypes.DECIMAL(18, 4),
                        DataTypes.DECIMAL(38, 10),
                        DataTypes.ARRAY(DataTypes.INT()),
                        DataTypes.MAP(DataTypes.STRING().notNull(), DataTypes.BIGINT()),
                        DataTypes.MAP(DataTypes.INT().notNull(), DataTypes.STRING()),
                        DataTypes.ROW(
                                DataTypes.FIELD(0, "a", DataTypes.INT()),
                                DataTypes.FIELD(1, "t", DataTypes.STRING().notNull()))
                    },
                    new String[] {
                        "k", "b", "i", "d", "f", "s", "bin", "n", "day", "ts", "ltz", "dec", "big", "arr",
                        "m", "mi", "r"
                    });

    static FileFormat avro() {
        Options options = new Options();
        options.set("file.compression.zstd-level", "1");
        return FileFormat.fromIdentifier("avro", options);
    }

    static GenericRow row(long i) {
        Map<Object, Object> m = new HashMap<>();
        m.put(BinaryString.fromString("a"), i);
        m.put(BinaryString.fromString("b" + (i % 3)), i % 2 == 0 ? null : -i);
        Map<Object, Object> mi = new HashMap<>();
        mi.put((int) (i % 10), BinaryString.fromString("x" + i));
        BigDecimal big =
                new BigDecimal(BigInteger.valueOf(i).pow(3).multiply(BigInteger.TEN.pow(12)).negate(), 10);
        Object[] items = i % 4 == 1 ? new Object[0] : new Object[] {(int) i, null, (int) -i};
        return GenericRow.of(
                i,
                i % 3 == 0,
                (int) (i * 7 % 2001 - 1000),
                i / 4.0,
                (float) (i % 1000) / 8f,
                BinaryString.fromString("name-" + i),
                new byte[] {(byte) i, (byte) (i >> 8)},
                i % 5 == 0 ? null : i * 13,
                (int) (i % 40000) - 20000,
                Timestamp.fromMicros(TS_BASE_MICROS + i),
                Timestamp.fromEpochMillis(TS_BASE_MICROS / 1000 - i),
                Decimal.fromUnscaledLong(i * 10007, 18, 4),
                Decimal.fromBigDecimal(big, 38, 10),
                i % 4 == 0 ? null : new GenericArray(items),
                new GenericMap(m),
                i % 6 == 0 ? null : new GenericMap(mi),
                i % 7 == 0
                        ? null
                        : GenericRow.of(i % 2 == 0 ? null : (int) i, BinaryString.fromString("t" + i)));
    }

    static long str(BinaryString s) {
        return s.toString().hashCode();
    }

    static long array(InternalArray a) {
        long h = a.size();
        for (int j = 0; j < a.size(); j++) {
            h = h * MIX + (a.isNullAt(j) ? 7 : a.getInt(j));
        }
        return h;
    }

    /** Entries in any order: a sum over them. */
    static long map(InternalMap m, boolean stringKeys) {
        long h = m.size();
        InternalArray keys = m.keyArray();
        InternalArray values = m.valueArray();
        for (int j = 0; j < m.size(); j++) {
            long key = stringKeys ? str(keys.getString(j)) : keys.getInt(j);
            long value = values.isNullAt(j) ? 7 : (stringKeys ? values.getLong(j) : str(values.getString(j)));
            h += key * 31 + value;
        }
        return h;
    }

    static long checksum(InternalRow r) {
        long h = r.getLong(0);
        h = h * MIX + (r.isNullAt(1) ? 7 : (r.getBoolean(1) ? 1 : 2));
        h = h * MIX + (r.isNullAt(2) ? 7 : r.getInt(2));
        h = h * MIX + (r.isNullAt(3) ? 7 : Double.doubleToLongBits(r.getDouble(3)));
        h = h * MIX + (r.isNullAt(4) ? 7 : Float.floatToIntBits(r.getFloat(4)));
        h = h * MIX + (r.isNullAt(5) ? 7 : str(r.getString(5)));
        h = h * MIX + (r.isNullAt(6) ? 7 : Arrays.hashCode(r.getBinary(6)));
        h = h * MIX + (r.isNullAt(7) ? 7 : r.getLong(7));
        h = h * MIX + (r.isNullAt(8) ? 7 : r.getInt(8));
        h = h * MIX + (r.isNullAt(9) ? 7 : r.getTimestamp(9, 6).toMicros());
        h = h * MIX + (r.isNullAt(10) ? 7 : r.getTimestamp(10, 3).getMillisecond());
        h = h * MIX + (r.isNullAt(11) ? 7 : r.getDecimal(11, 18, 4).toUnscaledLong());
        h = h * MIX + (r.isNullAt(12) ? 7 : r.getDecimal(12, 38, 10).toBigDecimal().hashCode());
        h = h * MIX + (r.isNullAt(13) ? 7 : array(r.getArray(13)));
        h = h * MIX + (r.isNullAt(14) ? 7 : map(r.getMap(14), true));
        h = h * MIX + (r.isNullAt(15) ? 7 : map(r.getMap(15), false));
        if (r.isNullAt(16)) {
            h = h * MIX + 7;
        } else {
            InternalRow nested = r.getRow(16, 2);
            h = h * MIX + (nested.isNullAt(0) ? 7 : nested.getInt(0));
            h = h * MIX + str(nested.getString(1));
        }
        return h;
    }

    static long[] read(LocalFileIO io, Path path) throws Exception {
        FormatReaderFactory factory = avro().createReaderFactory(ROW_TYPE, ROW_TYPE, new ArrayList<>());
        long sum = 0;
        long rows = 0;
        try (RecordReader<InternalRow> reader =
                factory.createReader(new FormatReaderContext(io, path, io.getFileSize(path)))) {
            RecordReader.RecordIterator<InternalRow> batch;
            while ((batch = reader.readBatch()) != null) {
                InternalRow r;
                while ((r = batch.next()) != null) {
                    rows++;
                    sum = sum * MIX + checksum(r);
                }
                batch.releaseBatch();
            }
        }
        return new long[] {rows, sum};
    }

    static void write(LocalFileIO io, Path path, long rows) throws Exception {
        FormatWriterFactory factory = avro().createWriterFactory(ROW_TYPE);
        io.deleteQuietly(path);
        try (PositionOutputStream out = io.newOutputStream(path, false)) {
            FormatWriter writer = factory.create(out, "zstd");
            for (long i = 0; i < rows; i++) {
                writer.addElement(row(i));
            }
            writer.close();
        }
    }

    public static void main(String[] args) throws Exception {
        LocalFileIO io = LocalFileIO.create();
        Path path = new Path(args[1]);
        List<String> times = new ArrayList<>();
        long[] read = null;
        int repeats = Integer.parseInt(args[args.length - 1]);
        for (int r = 0; r < repeats; r++) {
            long t0 = System.nanoTime();
            if (args[0].equals("read")) {
                read = read(io, path);
            } else {
                write(io, path, Long.parseLong(args[2]));
            }
            times.add(String.format(Locale.ROOT, "%.4f", (System.nanoTime() - t0) / 1e9));
        }
        String extra = read == null ? "" : ", \"rows\": " + read[0] + ", \"checksum\": " + read[1];
        System.out.println(
                "{\"phase\": \"" + args[0] + "\", \"seconds\": [" + String.join(", ", times) + "]" + extra + "}");
    }
}
