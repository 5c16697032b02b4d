package org.stratalake.spark.functions;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.Reducer;
import org.apache.spark.sql.connector.catalog.functions.ReducibleFunction;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * {@code bucket(n, key...)}: the catalog function behind the key-grouped partitioning a
 * stratalake scan reports. Spark resolves a reported {@code bucket} transform through the
 * catalog's FunctionCatalog and uses the bound function's identity ({@link #canonicalName()})
 * and bucket count to decide whether two scans are partitioned compatibly. When both sides of a
 * join are stratalake scans with the same bucket count and key types, it never evaluates it: the
 * bucket ids come from the splits (HasPartitionKey), computed by the Python writer.
 *
 * <p>Reducible: Paimon's bucket is {@code abs(h % n)} with Java's remainder, so for {@code m} a
 * multiple of {@code n} every key's bucket among {@code n} is its bucket among {@code m}, mod
 * {@code n}. With {@code spark.sql.sources.v2.bucketing.allowCompatibleTransforms.enabled}, Spark
 * then joins tables of 4 and 8 (or 2 and 6) buckets without a shuffle, grouping the larger side's
 * buckets. Only keys of the same types qualify (the same {@link Bound#canonicalName()}).
 *
 * <p>Only single-column bucket keys ever reach Spark: Spark 4.3's key-grouped partitioning takes
 * transforms over exactly one column ({@code KeyedPartitioning.supportsExpressions}), so a
 * multi-column bucket key is reported as unknown partitioning by the scan (as Paimon's own
 * connector does). Binding still accepts several key columns, consistently with Paimon's hash of
 * a BinaryRow of all of them, so the name stays correct if Spark lifts that restriction.
 *
 * <p>Evaluable ({@link BucketHash}): Spark can shuffle a non-stratalake side of a join into a
 * stratalake table's buckets ({@code spark.sql.sources.v2.bucketing.shuffle.enabled}), and writes
 * cluster rows by {@link #WRITE_NAME}, the same function with the timestamp layout of each key
 * column made explicit (Spark's timestamp type hides Paimon's precision; scans only report
 * microsecond timestamp keys, so {@code bucket} hashes timestamps as TIMESTAMP(6)).
 */
public final class BucketFunction implements UnboundFunction {
  public static final String NAME = "bucket";
  /** {@code stratalake_bucket(n, compactTimestampMask, key...)}: what writes cluster by. */
  public static final String WRITE_NAME = "stratalake_bucket";

  private final boolean write;

  public BucketFunction(boolean write) {
    this.write = write;
  }

  @Override
  public String name() {
    return write ? WRITE_NAME : NAME;
  }

  @Override
  public String description() {
    return write
        ? "stratalake_bucket(n, compact_timestamp_mask, key...): Paimon's bucket of a key, with"
            + " bit i of the mask set when key i is a TIMESTAMP(p <= 3)"
        : "bucket(n, key...): stratalake's (Paimon's) bucket of a key (timestamps as TIMESTAMP(6))";
  }

  @Override
  public BoundFunction bind(StructType inputType) {
    String signature = name() + (write ? "(n, mask, key...)" : "(n, key...)");
    return new Bound(KeyFunctionArgs.bind(inputType, write ? 2 : 1, signature), write);
  }

  static final class Bound implements ScalarFunction<Integer>, ReducibleFunction<Integer, Integer> {
    private final DataType[] inputTypes;
    private final DataType[] keyTypes;
    private final boolean write;

    Bound(DataType[] inputTypes, boolean write) {
      this.inputTypes = inputTypes;
      this.write = write;
      this.keyTypes =
          java.util.Arrays.copyOfRange(inputTypes, write ? 2 : 1, inputTypes.length);
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
      return write ? WRITE_NAME : NAME;
    }

    /**
     * Includes the key types: Paimon hashes the binary encoding of the key, so only keys of the
     * same types land in the same bucket for the same value.
     */
    @Override
    public String canonicalName() {
      return KeyFunctionArgs.canonicalName(name(), keyTypes);
    }

    /**
     * {@code b -> b % otherNumBuckets} when the other side is a stratalake bucket over keys of
     * the same types and its bucket count divides this one's; null (not reducible) otherwise.
     */
    @Override
    public Reducer<Integer, Integer> reducer(
        int thisNumBuckets, ReducibleFunction<?, ?> otherFunction, int otherNumBuckets) {
      if (write
          || !(otherFunction instanceof Bound)
          || !((Bound) otherFunction).canonicalName().equals(canonicalName())
          || thisNumBuckets <= 0
          || otherNumBuckets <= 0
          || thisNumBuckets == otherNumBuckets
          || thisNumBuckets % otherNumBuckets != 0) {
        return null;
      }
      return new ModReducer(otherNumBuckets);
    }

    @Override
    public Integer produceResult(InternalRow input) {
      int numBuckets = input.getInt(0);
      int mask = write ? input.getInt(1) : 0;
      return BucketHash.bucket(BucketHash.hash(input, write ? 2 : 1, keyTypes, mask), numBuckets);
    }

    @Override
    public boolean isResultNullable() {
      return false;
    }

    @Override
    public String toString() { // how plans (EXPLAIN) show it
      return canonicalName();
    }
  }

  /** A bucket among {@code m} to its bucket among {@code n}, for {@code n} dividing {@code m}. */
  static final class ModReducer implements Reducer<Integer, Integer>, java.io.Serializable {
    private static final long serialVersionUID = 1L;
    private final int numBuckets;

    ModReducer(int numBuckets) {
      this.numBuckets = numBuckets;
    }

    @Override
    public Integer reduce(Integer bucket) {
      return bucket % numBuckets;
    }

    @Override
    public DataType resultType() {
      return DataTypes.IntegerType;
    }

    @Override
    public String displayName() {
      return "stratalake.bucket mod " + numBuckets;
    }
  }
}
