package org.stratalake.spark.functions;

import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Argument checks and names shared by the catalog's key functions ({@link BucketFunction},
 * {@link SliceFunction}): some INT arguments, then key columns of bucket-key types.
 */
public final class KeyFunctionArgs {
  private KeyFunctionArgs() {}

  /**
   * The input types of a call with {@code intArgs} INT arguments then at least one key column
   * {@link BucketHash} can hash; otherwise an error naming {@code signature} and the input.
   */
  static DataType[] bind(StructType inputType, int intArgs, String signature) {
    StructField[] fields = inputType.fields();
    boolean ok = fields.length > intArgs;
    for (int i = 0; ok && i < intArgs; i++) {
      ok = fields[i].dataType().equals(DataTypes.IntegerType);
    }
    for (int i = intArgs; ok && i < fields.length; i++) {
      ok = BucketHash.supports(fields[i].dataType());
    }
    if (!ok) {
      throw new UnsupportedOperationException(
          "stratalake " + signature + " takes INT arguments then key columns of bucket-key types,"
              + " got " + inputType.simpleString());
    }
    DataType[] types = new DataType[fields.length];
    for (int i = 0; i < fields.length; i++) {
      types[i] = fields[i].dataType();
    }
    return types;
  }

  /**
   * {@code stratalake.<name>(<key types>)}: the key types are part of a function's identity,
   * since Paimon hashes the key's binary encoding (the same value of another type hashes apart).
   */
  static String canonicalName(String name, DataType[] keyTypes) {
    StringBuilder sb = new StringBuilder("stratalake." + name + "(");
    for (int i = 0; i < keyTypes.length; i++) {
      sb.append(i > 0 ? ", " : "").append(keyTypes[i].catalogString());
    }
    return sb.append(')').toString();
  }
}
