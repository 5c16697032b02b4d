package org.stratalake.spark.scan;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import org.apache.spark.sql.connector.expressions.FieldReference;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.colstats.ColumnStatistics;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;

/**
 * The statistics a batch scan reports to Spark's planner: Python's row count and size, and the
 * column statistics of the statistics file the snapshot read carries (ANALYZE TABLE), as
 * Paimon's {@code PaimonStatistics} reports them. Python sends min/max as JSON numbers, booleans
 * or strings (decimals); this class turns them into Spark's internal values of the read type.
 */
final class ReportedStatistics implements Statistics {
  private final long rows;
  private final long bytes;
  private final Map<NamedReference, ColumnStatistics> columns;

  ReportedStatistics(long rows, long bytes, List<JsonNode> columnStats, StructType readSchema) {
    this.rows = rows;
    this.bytes = bytes;
    this.columns = new HashMap<>();
    if (columnStats == null) {
      return;
    }
    for (JsonNode c : columnStats) {
      String name = c.get("name").asText();
      StructField field = find(readSchema, name);
      if (field == null) {
        continue;
      }
      columns.put(
          FieldReference.column(name),
          new Column(
              optionalLong(c, "null_count"),
              value(c.get("min"), field.dataType()),
              value(c.get("max"), field.dataType()),
              optionalLong(c, "distinct_count"),
              optionalLong(c, "avg_len"),
              optionalLong(c, "max_len")));
    }
  }

  @Override
  public OptionalLong sizeInBytes() {
    return OptionalLong.of(bytes);
  }

  @Override
  public OptionalLong numRows() {
    return OptionalLong.of(rows);
  }

  @Override
  public Map<NamedReference, ColumnStatistics> columnStats() {
    return columns;
  }

  private static StructField find(StructType schema, String name) {
    for (StructField f : schema.fields()) {
      if (f.name().equals(name)) {
        return f;
      }
    }
    return null;
  }

  private static OptionalLong optionalLong(JsonNode node, String key) {
    JsonNode v = node.get(key);
    return v == null || v.isNull() ? OptionalLong.empty() : OptionalLong.of(v.asLong());
  }

  /** Spark's internal value of {@code v} for a column of type {@code type}. */
  private static Optional<Object> value(JsonNode v, DataType type) {
    if (v == null || v.isNull()) {
      return Optional.empty();
    }
    Object out;
    if (type instanceof BooleanType) {
      out = v.asBoolean();
    } else if (type instanceof ByteType) {
      out = (byte) v.asInt();
    } else if (type instanceof ShortType) {
      out = (short) v.asInt();
    } else if (type instanceof IntegerType || type instanceof DateType) {
      out = v.asInt();
    } else if (type instanceof LongType
        || type instanceof TimestampType
        || type instanceof TimestampNTZType) {
      out = v.asLong();
    } else if (type instanceof FloatType) {
      out = (float) v.asDouble();
    } else if (type instanceof DoubleType) {
      out = v.asDouble();
    } else if (type instanceof DecimalType d) {
      out = Decimal.apply(new BigDecimal(v.asText()), d.precision(), d.scale());
    } else {
      return Optional.empty(); // a type Spark keeps no min/max of
    }
    return Optional.of(out);
  }

  private record Column(
      OptionalLong nullCount,
      Optional<Object> min,
      Optional<Object> max,
      OptionalLong distinctCount,
      OptionalLong avgLen,
      OptionalLong maxLen)
      implements ColumnStatistics {}
}
