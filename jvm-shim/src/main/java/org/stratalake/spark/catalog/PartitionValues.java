package org.stratalake.spark.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import java.math.BigDecimal;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.CharType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.sql.types.VarcharType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Partition identifiers (Spark's {@link InternalRow} of the partition schema) in the bridge's JSON
 * form and back; Python's {@code stratalake.spark.partition_ddl} holds the table of forms. Only
 * values are converted here; which partitions exist and what dropping one means is decided in
 * Python.
 */
final class PartitionValues {
  private static final JsonNodeFactory JSON = JsonNodeFactory.instance;

  private PartitionValues() {}

  static List<JsonNode> toJson(InternalRow row, StructType schema) {
    List<JsonNode> out = new ArrayList<>();
    for (int i = 0; i < schema.fields().length; i++) {
      DataType t = schema.fields()[i].dataType();
      if (row.isNullAt(i)) {
        out.add(JSON.nullNode());
      } else if (isText(t)) {
        out.add(JSON.textNode(row.getUTF8String(i).toString()));
      } else if (t instanceof BooleanType) {
        out.add(JSON.booleanNode(row.getBoolean(i)));
      } else if (t instanceof ByteType) {
        out.add(JSON.numberNode(row.getByte(i)));
      } else if (t instanceof ShortType) {
        out.add(JSON.numberNode(row.getShort(i)));
      } else if (t instanceof IntegerType) {
        out.add(JSON.numberNode(row.getInt(i)));
      } else if (t instanceof LongType || isTimestamp(t)) {
        out.add(JSON.numberNode(row.getLong(i)));
      } else if (t instanceof FloatType) {
        out.add(JSON.numberNode(row.getFloat(i)));
      } else if (t instanceof DoubleType) {
        out.add(JSON.numberNode(row.getDouble(i)));
      } else if (t instanceof DecimalType d) {
        out.add(
            JSON.textNode(row.getDecimal(i, d.precision(), d.scale()).toJavaBigDecimal().toPlainString()));
      } else if (t instanceof DateType) {
        out.add(JSON.textNode(LocalDate.ofEpochDay(row.getInt(i)).toString()));
      } else {
        throw unsupported(schema, i);
      }
    }
    return out;
  }

  static InternalRow fromJson(List<JsonNode> values, StructType schema) {
    Object[] out = new Object[schema.fields().length];
    for (int i = 0; i < out.length; i++) {
      JsonNode v = values.get(i);
      DataType t = schema.fields()[i].dataType();
      if (v == null || v.isNull()) {
        out[i] = null;
      } else if (isText(t)) {
        out[i] = UTF8String.fromString(v.asText());
      } else if (t instanceof BooleanType) {
        out[i] = v.asBoolean();
      } else if (t instanceof ByteType) {
        out[i] = (byte) v.asInt();
      } else if (t instanceof ShortType) {
        out[i] = (short) v.asInt();
      } else if (t instanceof IntegerType) {
        out[i] = v.asInt();
      } else if (t instanceof LongType || isTimestamp(t)) {
        out[i] = v.asLong();
      } else if (t instanceof FloatType) {
        out[i] = (float) v.asDouble();
      } else if (t instanceof DoubleType) {
        out[i] = v.asDouble();
      } else if (t instanceof DecimalType d) {
        out[i] = Decimal.apply(new BigDecimal(v.asText()), d.precision(), d.scale());
      } else if (t instanceof DateType) {
        out[i] = (int) LocalDate.parse(v.asText()).toEpochDay();
      } else {
        throw unsupported(schema, i);
      }
    }
    return new GenericInternalRow(out);
  }

  private static boolean isText(DataType t) {
    return t instanceof StringType || t instanceof CharType || t instanceof VarcharType;
  }

  private static boolean isTimestamp(DataType t) {
    return t instanceof TimestampType || t instanceof TimestampNTZType;
  }

  private static UnsupportedOperationException unsupported(StructType schema, int i) {
    return new UnsupportedOperationException(
        "stratalake: partition column "
            + schema.fields()[i].name()
            + " of type "
            + schema.fields()[i].dataType().simpleString()
            + " is not supported by partition DDL yet; use DELETE ... WHERE instead");
  }
}
