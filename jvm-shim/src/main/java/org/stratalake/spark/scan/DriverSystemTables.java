package org.stratalake.spark.scan;

import com.fasterxml.jackson.core.JsonProcessingException;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.aggregate.AggregateFunc;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.aggregate.Count;
import org.apache.spark.sql.connector.expressions.aggregate.CountStar;
import org.apache.spark.sql.connector.expressions.aggregate.Max;
import org.apache.spark.sql.connector.expressions.aggregate.Min;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownAggregates;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.stratalake.spark.bridge.Messages.ReadSystemTable;
import org.stratalake.spark.bridge.Operation;
import org.stratalake.spark.bridge.PythonBridge;

/**
 * Metadata system tables ({@code t$snapshots}, {@code sys.tables}...) answered on the driver.
 *
 * <p>Their rows are computed from a few metadata files; through the Python data source a query
 * also paid a planning call, a Spark task and a Python worker for them. Here the scan asks Python
 * once while Spark plans (stratalake.spark.driver_tables: the rows as an Arrow IPC stream, or null
 * for a table read by tasks: the row and per-file tables, incremental reads, large answers) and
 * hands Spark a {@link LocalScan}, which it runs as a local table scan on the driver. Turning
 * native reads off ({@code stratalake.read.native.enabled}) turns this off too.
 */
public final class DriverSystemTables {
  private DriverSystemTables() {}

  /**
   * A builder whose scan holds the rows of the system table {@code sourceOptions} name, or is the
   * scan of {@code distributed} when Python leaves the table to Spark tasks.
   */
  public static ScanBuilder builder(
      StructType schema, Map<String, String> sourceOptions, Supplier<ScanBuilder> distributed) {
    if (!NativeParquet.enabled(sourceOptions)) {
      return distributed.get(); // native reads off: everything through the Python data source
    }
    return new Builder(schema, sourceOptions, distributed);
  }

  /**
   * Asks Python for the rows once. An aggregate without grouping over them (COUNT, MIN, MAX: the
   * {@code max(snapshot_id)} before an incremental read) is answered here too, as one row: a
   * local scan of several rows is split over the cores and shuffled before Spark aggregates it,
   * two stages for a handful of rows.
   */
  private static final class Builder implements ScanBuilder, SupportsPushDownAggregates {
    private final StructType schema;
    private final Map<String, String> sourceOptions;
    private final Supplier<ScanBuilder> distributed;
    private boolean asked;
    private InternalRow[] rows;
    private Rows aggregated;

    Builder(StructType schema, Map<String, String> sourceOptions, Supplier<ScanBuilder> distributed) {
      this.schema = schema;
      this.sourceOptions = sourceOptions;
      this.distributed = distributed;
    }

    /** The rows, or null when Spark tasks read the table. */
    private InternalRow[] rows() {
      if (!asked) {
        asked = true;
        String ipc;
        try {
          ipc =
              PythonBridge.call(
                  Operation.READ_SYSTEM_TABLE,
                  new ReadSystemTable(sourceOptions, PythonBridge.JSON.readTree(schema.json())));
        } catch (JsonProcessingException e) {
          throw new IllegalStateException("stratalake: Spark's schema JSON did not parse", e);
        }
        rows = ipc == null ? null : decode(ipc);
      }
      return rows;
    }

    @Override
    public boolean supportCompletePushDown(Aggregation aggregation) {
      return pushAggregation(aggregation);
    }

    @Override
    public boolean pushAggregation(Aggregation aggregation) {
      aggregated = null;
      if (aggregation.groupByExpressions().length > 0 || rows() == null) {
        return false;
      }
      AggregateFunc[] functions = aggregation.aggregateExpressions();
      StructField[] fields = new StructField[functions.length];
      Object[] values = new Object[functions.length];
      for (int i = 0; i < functions.length; i++) {
        AggregateFunc f = functions[i];
        if (f instanceof CountStar) {
          fields[i] = new StructField("count(*)", DataTypes.LongType, false, Metadata.empty());
          values[i] = (long) rows.length;
          continue;
        }
        Expression argument =
            f instanceof Count c && !c.isDistinct()
                ? c.column()
                : f instanceof Min m ? m.column() : f instanceof Max x ? x.column() : null;
        int ordinal = ordinal(argument);
        if (ordinal < 0) {
          return false;
        }
        DataType type = schema.fields()[ordinal].dataType();
        if (f instanceof Count) {
          long n = 0;
          for (InternalRow row : rows) {
            n += row.isNullAt(ordinal) ? 0 : 1;
          }
          fields[i] = new StructField("count", DataTypes.LongType, false, Metadata.empty());
          values[i] = n;
          continue;
        }
        java.util.Comparator<InternalRow> order = order(type, ordinal);
        if (order == null) {
          return false;
        }
        InternalRow best = null;
        for (InternalRow row : rows) {
          if (!row.isNullAt(ordinal)
              && (best == null || (f instanceof Min ? -1 : 1) * order.compare(row, best) > 0)) {
            best = row;
          }
        }
        fields[i] = new StructField(f instanceof Min ? "min" : "max", type, true, Metadata.empty());
        values[i] = best == null ? null : best.get(ordinal, type);
      }
      aggregated =
          new Rows(new StructType(fields), new InternalRow[] {new GenericInternalRow(values)});
      return true;
    }

    /** The ordinal of the top-level column {@code e} names, or -1. */
    private int ordinal(Expression e) {
      if (e instanceof NamedReference r && r.fieldNames().length == 1) {
        String[] names = schema.fieldNames();
        for (int i = 0; i < names.length; i++) {
          if (names[i].equals(r.fieldNames()[0])) {
            return i;
          }
        }
      }
      return -1;
    }

    /** Rows ordered by column {@code ordinal} of {@code type} as Spark orders it, or null. */
    private static java.util.Comparator<InternalRow> order(DataType type, int ordinal) {
      if (type instanceof LongType || type instanceof TimestampType || type instanceof TimestampNTZType) {
        return (a, b) -> Long.compare(a.getLong(ordinal), b.getLong(ordinal));
      }
      if (type instanceof IntegerType || type instanceof DateType) {
        return (a, b) -> Integer.compare(a.getInt(ordinal), b.getInt(ordinal));
      }
      if (DataTypes.StringType.equals(type)) {
        // (only the default UTF8_BINARY collation: the system tables' string columns)
        return (a, b) -> a.getUTF8String(ordinal).binaryCompare(b.getUTF8String(ordinal));
      }
      if (type instanceof BooleanType) {
        return (a, b) -> Boolean.compare(a.getBoolean(ordinal), b.getBoolean(ordinal));
      }
      return null;
    }

    @Override
    public Scan build() {
      if (aggregated != null) {
        return aggregated;
      }
      return rows() == null ? distributed.get().build() : new Rows(schema, rows);
    }
  }

  /** The rows of a base64 Arrow IPC stream in Spark's rows (each copied out of the vectors). */
  static InternalRow[] decode(String base64) {
    byte[] bytes = Base64.getDecoder().decode(base64);
    List<InternalRow> out = new ArrayList<>();
    try (BufferAllocator allocator = new RootAllocator();
        ArrowStreamReader reader = new ArrowStreamReader(new ByteArrayInputStream(bytes), allocator)) {
      VectorSchemaRoot root = reader.getVectorSchemaRoot();
      ColumnVector[] columns = new ColumnVector[root.getFieldVectors().size()];
      while (reader.loadNextBatch()) {
        // The reader refills the same vectors per batch: wrap them again, copy every row out.
        for (int i = 0; i < columns.length; i++) {
          columns[i] = new ArrowColumnVector(root.getVector(i));
        }
        Iterator<InternalRow> rows = new ColumnarBatch(columns, root.getRowCount()).rowIterator();
        while (rows.hasNext()) {
          out.add(rows.next().copy());
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("stratalake: a system table's rows from Python did not decode", e);
    }
    return out.toArray(new InternalRow[0]);
  }

  /**
   * The rows, run by Spark as a local table scan: a plain {@code SELECT} collects them with no
   * job, and so does one that projects or filters them ({@link DriverRowsStrategy}). (A scan of one input partition was tried too: Spark still shuffles before an aggregate
   * over it, and a plain {@code SELECT} then costs a job.)
   */
  private record Rows(StructType readSchema, InternalRow[] rows) implements DriverRows {
    @Override
    public String description() {
      return "stratalake system table (answered on the driver)";
    }
  }
}
