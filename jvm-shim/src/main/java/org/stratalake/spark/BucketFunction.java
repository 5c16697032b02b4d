package org.stratalake.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.Reducer;
import org.apache.spark.sql.connector.catalog.functions.ReducibleFunction;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
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
 * <p>Evaluation would only be needed to shuffle a non-stratalake side into stratalake's buckets
 * ({@code spark.sql.sources.v2.bucketing.shuffle.enabled}, off by default). That needs Paimon's
 * bucket hash (BinaryRow layout + MurmurHash3) per row; a per-row bridge call is far too slow and
 * a Java port would duplicate format logic, so it is not offered: evaluation fails with an
 * explanation instead of producing wrong buckets.
 */
final class BucketFunction implements UnboundFunction {
  static final String NAME = "bucket";

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public String description() {
    return "bucket(n, key...): stratalake's (Paimon's) bucket of a key; identifies bucketed "
        + "layouts for storage-partitioned joins, not evaluated in queries";
  }

  @Override
  public BoundFunction bind(StructType inputType) {
    StructField[] fields = inputType.fields();
    if (fields.length < 2 || !fields[0].dataType().equals(DataTypes.IntegerType)) {
      throw new UnsupportedOperationException(
          "stratalake bucket(n, key...) takes an INT bucket count and the key columns, got "
              + inputType.simpleString());
    }
    DataType[] types = new DataType[fields.length];
    for (int i = 0; i < fields.length; i++) {
      types[i] = fields[i].dataType();
    }
    return new Bound(types);
  }

  static final class Bound implements ScalarFunction<Integer>, ReducibleFunction<Integer, Integer> {
    private final DataType[] inputTypes;

    Bound(DataType[] inputTypes) {
      this.inputTypes = inputTypes;
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

    /**
     * Includes the key types: Paimon hashes the binary encoding of the key, so only keys of the
     * same types land in the same bucket for the same value.
     */
    @Override
    public String canonicalName() {
      StringBuilder sb = new StringBuilder("stratalake.bucket(");
      for (int i = 1; i < inputTypes.length; i++) {
        sb.append(i > 1 ? ", " : "").append(inputTypes[i].catalogString());
      }
      return sb.append(')').toString();
    }

    /**
     * {@code b -> b % otherNumBuckets} when the other side is a stratalake bucket over keys of
     * the same types and its bucket count divides this one's; null (not reducible) otherwise.
     */
    @Override
    public Reducer<Integer, Integer> reducer(
        int thisNumBuckets, ReducibleFunction<?, ?> otherFunction, int otherNumBuckets) {
      if (!(otherFunction instanceof Bound)
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
      throw new UnsupportedOperationException(
          "stratalake's bucket function cannot be evaluated in Spark (it is Paimon's bucket hash,"
              + " computed by the Python writer). It only matches stratalake tables' bucketing;"
              + " set spark.sql.sources.v2.bucketing.shuffle.enabled=false to join a stratalake"
              + " table with a differently partitioned input");
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
