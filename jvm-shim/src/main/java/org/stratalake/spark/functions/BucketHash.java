package org.stratalake.spark.functions;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;

/**
 * Paimon's fixed-bucket function for one row of Spark values: the key's binary row (Paimon's
 * BinaryRow layout, without the arity prefix) hashed with Paimon's word-wise MurmurHash3_x86_32
 * (seed 42), then {@code abs(hash % n)}. See docs/format.md, "Fixed-bucket assignment".
 *
 * <p>This is the one piece of table-format logic the shim holds (ARCHITECTURE.md says why): Spark
 * must route every row of a bucket to one write task, which needs the bucket of each row in the
 * JVM; a bridge call per row would be far too slow. The Python implementation
 * ({@code stratalake.spec.bucket}) stays the reference; tests compare both on the same keys.
 *
 * <p>Spark's timestamp type hides Paimon's precision, which changes the layout (TIMESTAMP(p <= 3)
 * is stored as epoch millis in the slot, finer ones as millis in the variable part plus the nanos
 * of the milli in the slot): {@code compactMask} bit {@code i} says key {@code i} is compact.
 */
public final class BucketHash {
  private static final int SEED = 42;
  private static final int C1 = 0xcc9e2d51;
  private static final int C2 = 0x1b873593;
  private static final int MAX_INLINE = 7;

  private BucketHash() {}

  /** Whether rows of {@code type} can be hashed here (the key types Paimon allows). */
  static boolean supports(DataType type) {
    return type instanceof BooleanType
        || type instanceof ByteType
        || type instanceof ShortType
        || type instanceof IntegerType
        || type instanceof DateType
        || type instanceof FloatType
        || type instanceof LongType
        || type instanceof DoubleType
        || type instanceof DecimalType
        || type instanceof StringType
        || type instanceof BinaryType
        || type instanceof TimestampType
        || type instanceof TimestampNTZType;
  }

  /** {@code abs(h % numBuckets)} with Java's truncating remainder, as Paimon. */
  static int bucket(int hash, int numBuckets) {
    return Math.abs(hash % numBuckets);
  }

  /** The hash of the key made of {@code row}'s fields {@code first ..} (one per type). */
  static int hash(InternalRow row, int first, DataType[] types, int compactMask) {
    int arity = types.length;
    int header = ((arity + 63 + 8) / 64) * 8;
    int fixed = header + 8 * arity;
    int variable = 0;
    for (int i = 0; i < arity; i++) {
      variable += variableSize(row, first + i, types[i], isCompact(compactMask, i));
    }
    ByteBuffer buf = ByteBuffer.allocate(fixed + variable).order(ByteOrder.LITTLE_ENDIAN);
    int cursor = fixed;
    for (int i = 0; i < arity; i++) {
      int ord = first + i;
      int slot = header + 8 * i;
      DataType t = types[i];
      boolean compact = isCompact(compactMask, i);
      if (row.isNullAt(ord)) {
        int bit = i + 8;
        buf.put(bit / 8, (byte) (buf.get(bit / 8) | (1 << (bit % 8))));
        // Non-compact decimals and timestamps keep their variable-part room when null.
        if (t instanceof DecimalType && !isCompactDecimal((DecimalType) t)) {
          buf.putLong(slot, (long) cursor << 32);
          cursor += 16;
        } else if (isTimestamp(t) && !compact) {
          buf.putLong(slot, (long) cursor << 32);
          cursor += 8;
        }
        continue;
      }
      if (t instanceof BooleanType) {
        buf.put(slot, (byte) (row.getBoolean(ord) ? 1 : 0));
      } else if (t instanceof ByteType) {
        buf.put(slot, row.getByte(ord));
      } else if (t instanceof ShortType) {
        buf.putShort(slot, row.getShort(ord));
      } else if (t instanceof IntegerType || t instanceof DateType) {
        buf.putInt(slot, row.getInt(ord));
      } else if (t instanceof FloatType) {
        buf.putInt(slot, Float.floatToRawIntBits(row.getFloat(ord)));
      } else if (t instanceof LongType) {
        buf.putLong(slot, row.getLong(ord));
      } else if (t instanceof DoubleType) {
        buf.putLong(slot, Double.doubleToRawLongBits(row.getDouble(ord)));
      } else if (t instanceof DecimalType) {
        DecimalType dt = (DecimalType) t;
        org.apache.spark.sql.types.Decimal d = row.getDecimal(ord, dt.precision(), dt.scale());
        if (isCompactDecimal(dt)) {
          buf.putLong(slot, d.toUnscaledLong());
        } else {
          byte[] bytes = d.toJavaBigDecimal().unscaledValue().toByteArray();
          for (int b = 0; b < bytes.length; b++) {
            buf.put(cursor + b, bytes[b]);
          }
          buf.putLong(slot, ((long) cursor << 32) | bytes.length);
          cursor += 16;
        }
      } else if (isTimestamp(t)) {
        long micros = row.getLong(ord);
        long millis = Math.floorDiv(micros, 1000L);
        if (compact) {
          buf.putLong(slot, millis);
        } else {
          long nanoOfMilli = Math.floorMod(micros, 1000L) * 1000L;
          buf.putLong(cursor, millis);
          buf.putLong(slot, ((long) cursor << 32) | nanoOfMilli);
          cursor += 8;
        }
      } else { // string or binary
        byte[] bytes =
            t instanceof StringType ? row.getUTF8String(ord).getBytes() : row.getBinary(ord);
        if (bytes.length <= MAX_INLINE) {
          for (int b = 0; b < bytes.length; b++) {
            buf.put(slot + b, bytes[b]);
          }
          buf.put(slot + 7, (byte) (0x80 | bytes.length));
        } else {
          for (int b = 0; b < bytes.length; b++) {
            buf.put(cursor + b, bytes[b]);
          }
          buf.putLong(slot, ((long) cursor << 32) | bytes.length);
          cursor += roundUp8(bytes.length);
        }
      }
    }
    return hashWords(buf.array());
  }

  private static int variableSize(InternalRow row, int ord, DataType t, boolean compact) {
    if (t instanceof DecimalType) {
      return isCompactDecimal((DecimalType) t) ? 0 : 16;
    }
    if (isTimestamp(t)) {
      return compact ? 0 : 8;
    }
    if (row.isNullAt(ord)) {
      return 0;
    }
    if (t instanceof StringType) {
      int n = row.getUTF8String(ord).numBytes();
      return n <= MAX_INLINE ? 0 : roundUp8(n);
    }
    if (t instanceof BinaryType) {
      int n = row.getBinary(ord).length;
      return n <= MAX_INLINE ? 0 : roundUp8(n);
    }
    return 0;
  }

  private static boolean isCompact(int mask, int i) {
    return (mask & (1 << i)) != 0;
  }

  private static boolean isCompactDecimal(DecimalType t) {
    return t.precision() <= 18;
  }

  private static boolean isTimestamp(DataType t) {
    return t instanceof TimestampType || t instanceof TimestampNTZType;
  }

  private static int roundUp8(int n) {
    return (n + 7) & ~7;
  }

  /** Paimon's MurmurHash3_x86_32 over whole little-endian words (no tail), seed 42. */
  static int hashWords(byte[] bytes) {
    ByteBuffer buf = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    int h1 = SEED;
    for (int i = 0; i + 4 <= bytes.length; i += 4) {
      int k1 = buf.getInt(i) * C1;
      k1 = Integer.rotateLeft(k1, 15) * C2;
      h1 ^= k1;
      h1 = Integer.rotateLeft(h1, 13) * 5 + 0xe6546b64;
    }
    h1 ^= bytes.length;
    h1 ^= h1 >>> 16;
    h1 *= 0x85ebca6b;
    h1 ^= h1 >>> 13;
    h1 *= 0xc2b2ae35;
    h1 ^= h1 >>> 16;
    return h1;
  }
}
