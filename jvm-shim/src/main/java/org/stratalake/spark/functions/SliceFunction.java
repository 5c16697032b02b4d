package org.stratalake.spark.functions;

import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.hash.Murmur3_x86_32;

/**
 * {@code stratalake_slice(n, m, mask, key...)}: what writes to a dynamic-bucket table without
 * partition columns (or a cross-partition upsert table) cluster by: with {@code m} shuffle
 * partitions, the rows of assigner slice {@code s} = {@code |key hash % n|} (Paimon's assigner of
 * the key) reach partition {@code s mod m}.
 *
 * <p>Why not cluster by the slice itself: Spark's hash partitioning hashes the clustering value
 * again ({@code pmod(murmur3(value, 42), m)}), which maps n slice ids onto m partitions unevenly
 * (with n = m = 4, slices 0, 1 and 3 land in one task). This returns, for slice s, the smallest
 * non-negative int whose Spark partition among m is {@code s mod m}, so slices spread over the
 * partitions evenly: one each when n = m (the default, both being the shuffle partitions).
 * Partitions stay Spark's to coalesce (AQE merges neighbouring small ones into one task).
 */
public final class SliceFunction implements UnboundFunction {
  public static final String NAME = "stratalake_slice";

  /** n -> (slice -> the int Spark's hash partitioning sends to partition slice). */
  private static final ConcurrentHashMap<Integer, int[]> CHANNELS = new ConcurrentHashMap<>();

  /** The seed of Spark's {@code Murmur3Hash} in {@code HashPartitioning}. */
  private static final int SPARK_HASH_SEED = 42;

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public String description() {
    return "stratalake_slice(n, m, compact_timestamp_mask, key...): an int Spark's hash"
        + " partitioning among m sends to partition (|key hash % n| mod m), n assigner slices";
  }

  @Override
  public BoundFunction bind(StructType inputType) {
    return new Bound(KeyFunctionArgs.bind(inputType, 3, NAME + "(n, m, mask, key...)"));
  }

  /** For each partition p of n, the smallest int x >= 0 with pmod(murmur3(x), n) == p. */
  static int[] channels(int n) {
    return CHANNELS.computeIfAbsent(
        n,
        k -> {
          int[] out = new int[k];
          java.util.Arrays.fill(out, -1);
          int found = 0;
          for (int x = 0; found < k; x++) {
            int p = Math.floorMod(Murmur3_x86_32.hashInt(x, SPARK_HASH_SEED), k);
            if (out[p] < 0) {
              out[p] = x;
              found++;
            }
          }
          return out;
        });
  }

  static final class Bound implements ScalarFunction<Integer> {
    private final DataType[] inputTypes;
    private final DataType[] keyTypes;

    Bound(DataType[] inputTypes) {
      this.inputTypes = inputTypes;
      this.keyTypes = java.util.Arrays.copyOfRange(inputTypes, 3, inputTypes.length);
    }

    @Override
    public DataType[] inputTypes() {
      return inputTypes;
    }

    @Override
    public DataType resultType() {
      return DataTypes.IntegerType;
    }

    @Override
    public String name() {
      return NAME;
    }

    @Override
    public String canonicalName() {
      return KeyFunctionArgs.canonicalName(NAME, keyTypes);
    }

    @Override
    public Integer produceResult(InternalRow input) {
      int n = input.getInt(0);
      int m = input.getInt(1);
      int slice = BucketHash.bucket(BucketHash.hash(input, 3, keyTypes, input.getInt(2)), n);
      return channels(m)[slice % m];
    }

    @Override
    public boolean isResultNullable() {
      return false;
    }

    @Override
    public String toString() {
      return canonicalName();
    }
  }
}
