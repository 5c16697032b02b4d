package org.stratalake.spark.write;

import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DayTimeIntervalType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.sql.types.YearMonthIntervalType;

/**
 * Spark's per-row byte check of the Arrow batches it sends to the Python writers, replaced by a
 * bound the shim holds itself.
 *
 * <p>Spark caps a batch at {@code spark.sql.execution.arrow.maxRecordsPerBatch} rows and {@code
 * spark.sql.execution.arrow.maxBytesPerBatch} bytes. To hold the byte cap it sums the sizes of
 * every column's Arrow vectors after every row; only the value {@code Integer.MAX_VALUE} turns
 * that off. In a 20M-row load of six columns the check took 8 of the JVM's 24 CPU-seconds
 * (BENCHMARKS.md). The shim turns it off for the Python writer's runner alone (the setting is
 * lifted in the task's properties while Spark builds that runner and restored before any other
 * operator of the task reads it), where it can hold the byte cap by other means:
 *
 * <ul>
 *   <li>every column has a fixed width: no batch of the capped row count can reach the byte cap
 *       ({@link #redundant});
 *   <li>the columns are fixed-width, strings and binaries, and the rows carry a column that is
 *       never null (a key table's first primary-key column): without the check Spark cuts a batch
 *       every {@code maxRecordsPerBatch} rows, so before a row that would take the batch past the
 *       byte cap the shim ends the batch with rows of nulls ({@link Padded}), which the Python
 *       writer drops (it is told the column through the task property {@value #PADDING}). A row's
 *       bytes are bounded in O(1) from its {@code UnsafeRow} size.
 * </ul>
 *
 * Nested columns (arrays, maps, structs) keep Spark's check.
 */
public final class ArrowBatchBound {
  static final String MAX_BYTES = "spark.sql.execution.arrow.maxBytesPerBatch";
  /** The task property naming the column whose nulls mark padding rows (the Python writer reads it). */
  static final String PADDING = "stratalake.write.padding";
  private static final String NO_CHECK = Integer.toString(Integer.MAX_VALUE);
  // Python writers of this JVM built without the check, and padding rows sent (tests read them:
  // local mode runs the tasks here)
  private static final AtomicLong LIFTED = new AtomicLong();
  private static final AtomicLong PADDING_ROWS = new AtomicLong();

  private ArrowBatchBound() {}

  /**
   * The most Arrow bytes one row of {@code schema} takes (values and a validity byte per column,
   * a bit rounded up), or -1 when a column has no fixed width.
   */
  public static long rowBytes(StructType schema) {
    long total = 0;
    for (StructField f : schema.fields()) {
      long width = valueBytes(f.dataType());
      if (width < 0) {
        return -1;
      }
      total += width + 1;
    }
    return total;
  }

  /**
   * The Arrow bytes of one row of {@code schema} besides its strings' and binaries' contents
   * (their offsets counted), or -1 when a column is nested.
   */
  public static long flatRowBytes(StructType schema) {
    long total = 0;
    for (StructField f : schema.fields()) {
      long width = variableWidth(f.dataType()) ? 4 : valueBytes(f.dataType());
      if (width < 0) {
        return -1;
      }
      total += width + 1;
    }
    return total;
  }

  private static boolean variableWidth(DataType t) {
    return t instanceof StringType || t instanceof BinaryType;
  }

  private static long valueBytes(DataType t) {
    if (t instanceof BooleanType || t instanceof ByteType) {
      return 1;
    }
    if (t instanceof ShortType) {
      return 2;
    }
    if (t instanceof IntegerType
        || t instanceof FloatType
        || t instanceof DateType
        || t instanceof YearMonthIntervalType) {
      return 4;
    }
    if (t instanceof LongType
        || t instanceof DoubleType
        || t instanceof TimestampType
        || t instanceof TimestampNTZType
        || t instanceof DayTimeIntervalType) {
      return 8;
    }
    if (t instanceof DecimalType) {
      return 16; // Arrow's decimal128
    }
    return -1;
  }

  /**
   * Whether Spark's byte check cannot end a batch of {@code schema}'s rows under {@code conf}: the
   * row cap times the widest row, doubled for the vectors' rounding, is within the byte cap.
   */
  public static boolean redundant(StructType schema, SQLConf conf) {
    long maxBytes = conf.arrowMaxBytesPerBatch();
    int maxRecords = conf.arrowMaxRecordsPerBatch();
    long row = rowBytes(schema);
    return maxBytes < Integer.MAX_VALUE
        && maxRecords > 0
        && row > 0
        && 2L * row * maxRecords <= maxBytes;
  }

  /**
   * How the Python writer of {@code table} gets rows of {@code schema} under {@code conf}: without
   * Spark's check where it is redundant, cut by padding rows marked by a null in column {@code
   * marker} (-1: none) where the columns are flat; null where Spark's check stays.
   */
  public static Plan plan(StructType schema, SQLConf conf, int marker, String table) {
    if (redundant(schema, conf)) {
      return new Plan(schema, -1, table);
    }
    long maxBytes = conf.arrowMaxBytesPerBatch();
    int maxRecords = conf.arrowMaxRecordsPerBatch();
    long fixed = flatRowBytes(schema);
    // Padding needs a row cap to cut by, and room under the byte cap beyond a batch's fixed bytes.
    if (maxBytes < Integer.MAX_VALUE
        && maxRecords > 0
        && marker >= 0
        && fixed > 0
        && 2L * maxRecords * fixed <= maxBytes) {
      return new Plan(schema, marker, table);
    }
    return null;
  }

  /** The write's decision, carried to its tasks. */
  public static final class Plan implements Serializable {
    private static final long serialVersionUID = 1L;
    final String table;
    final int marker; // -1: no padding (the check is redundant)
    final String markerName;
    final long fixedBytes; // flatRowBytes
    final int[] strings; // ordinals of string columns
    final int[] binaries; // ordinals of binary columns
    final int numFields;

    Plan(StructType schema, int marker, String table) {
      this.table = table;
      this.marker = marker;
      this.markerName = marker < 0 ? null : schema.fields()[marker].name();
      this.fixedBytes = flatRowBytes(schema);
      this.numFields = schema.fields().length;
      List<Integer> s = new ArrayList<>();
      List<Integer> b = new ArrayList<>();
      for (int i = 0; i < numFields; i++) {
        DataType t = schema.fields()[i].dataType();
        if (t instanceof StringType) {
          s.add(i);
        } else if (t instanceof BinaryType) {
          b.add(i);
        }
      }
      this.strings = s.stream().mapToInt(Integer::intValue).toArray();
      this.binaries = b.stream().mapToInt(Integer::intValue).toArray();
    }

    /** Whether batches are cut by padding rows (else the check is merely redundant). */
    public boolean padded() {
      return marker >= 0;
    }

    /** At least the Arrow bytes {@code row} adds to a batch: O(1) for an {@code UnsafeRow}. */
    long bytes(InternalRow row) {
      if (row instanceof UnsafeRow) {
        // Its 8-byte word per column holds any fixed-width value but a decimal128's second half,
        // and its variable region every string's bytes: fixedBytes covers the rest.
        return ((UnsafeRow) row).getSizeInBytes() + fixedBytes;
      }
      long total = fixedBytes;
      for (int i : strings) {
        if (!row.isNullAt(i)) {
          total += row.getUTF8String(i).numBytes();
        }
      }
      for (int i : binaries) {
        if (!row.isNullAt(i)) {
          total += row.getBinary(i).length;
        }
      }
      return total;
    }
  }

  /** How many task writers of this JVM built their Python runner without the check. */
  public static long liftedWriters() {
    return LIFTED.get();
  }

  /** How many padding rows the writers of this JVM sent to end batches before the byte cap. */
  public static long paddingRows() {
    return PADDING_ROWS.get();
  }

  /** {@code delegate}, whose writers build their Python runner without Spark's check, as planned. */
  static DataWriterFactory lifted(DataWriterFactory delegate, Plan plan) {
    return new Factory(delegate, plan);
  }

  /**
   * {@code rows} as the Python writer's runner gets them without Spark's check (it cuts a batch
   * every {@code maxRecords} rows): a batch whose next row would take its bytes past {@code
   * maxBytes} is filled up with rows of nulls instead.
   */
  public static Iterator<InternalRow> padded(
      Iterator<InternalRow> rows, Plan plan, int maxRecords, long maxBytes) {
    return new Padded(rows, plan, maxRecords, maxBytes);
  }

  private static final class Factory implements DataWriterFactory {
    private static final long serialVersionUID = 1L;
    private final DataWriterFactory delegate;
    private final Plan plan;

    Factory(DataWriterFactory delegate, Plan plan) {
      this.delegate = delegate;
      this.plan = plan;
    }

    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
      return new Writer(delegate.createWriter(partitionId, taskId), plan);
    }
  }

  /**
   * Spark's Python writer gets rows without its check: a batch ends every {@code maxRecords} rows
   * it sends. Before a row that would take the batch's bytes past {@code maxBytes}, the batch is
   * filled up with padding rows (every column null, so the marker column too, where no real row
   * has a null). A row above the cap alone gets a batch of its own, as with Spark's check.
   */
  static final class Padded implements Iterator<InternalRow> {
    private final Iterator<InternalRow> rows;
    private final Plan plan;
    private final int maxRecords;
    private final long maxBytes;
    private final InternalRow padding;
    private int inBatch; // rows sent in the current batch, padding included
    private long bytes; // at least the current batch's Arrow bytes
    private int toPad; // padding rows still to send before `pending`
    private InternalRow pending; // the row that starts the next batch (not pulled past: safe to hold)
    private long pendingBytes;

    Padded(Iterator<InternalRow> rows, Plan plan, int maxRecords, long maxBytes) {
      this.rows = rows;
      this.plan = plan;
      this.maxRecords = maxRecords;
      this.maxBytes = maxBytes;
      this.padding = new GenericInternalRow(plan.numFields);
    }

    @Override
    public boolean hasNext() {
      return toPad > 0 || pending != null || rows.hasNext();
    }

    @Override
    public InternalRow next() {
      if (toPad > 0) {
        toPad--;
        return pad();
      }
      if (pending != null) {
        InternalRow row = pending;
        pending = null;
        return send(row, pendingBytes);
      }
      InternalRow row = rows.next();
      if (row.isNullAt(plan.marker)) {
        // Python would drop it as padding: refuse it here, as Python refuses a null key.
        throw new IllegalArgumentException(
            "table " + plan.table + ": primary-key column '" + plan.markerName
                + "' has a null value; primary-key values must not be null");
      }
      long size = plan.bytes(row);
      // The batch's slots after this row hold at least their fixed bytes (padding rows too).
      long rest = (long) (maxRecords - inBatch - 1) * plan.fixedBytes;
      if (inBatch > 0 && bytes + size + rest > maxBytes) {
        pending = row;
        pendingBytes = size;
        toPad = maxRecords - inBatch - 1;
        return pad();
      }
      return send(row, size);
    }

    private InternalRow pad() {
      PADDING_ROWS.incrementAndGet();
      return send(padding, 0);
    }

    private InternalRow send(InternalRow row, long size) {
      bytes += size;
      if (++inBatch == maxRecords) {
        inBatch = 0;
        bytes = 0;
      }
      return row;
    }
  }

  /**
   * Lifts the check in this task's properties (which Spark's executors read their SQL settings
   * from) for the delegate's {@code writeAll}, which builds the Python runner and sends the
   * properties to its worker before it pulls the first row; the first pull restores them, so
   * operators feeding this writer in the same task (their runners built on that pull) keep
   * Spark's check.
   */
  private static final class Writer implements DataWriter<InternalRow> {
    private final DataWriter<InternalRow> delegate;
    private final Plan plan;

    Writer(DataWriter<InternalRow> delegate, Plan plan) {
      this.delegate = delegate;
      this.plan = plan;
    }

    @Override
    public void writeAll(Iterator<InternalRow> records) throws IOException {
      TaskContext task = TaskContext.get();
      if (task == null) {
        delegate.writeAll(records);
        return;
      }
      Iterator<InternalRow> rows = records;
      Map<String, String> lift = new LinkedHashMap<>();
      lift.put(MAX_BYTES, NO_CHECK);
      if (plan.padded()) {
        // The caps as this task's runner would read them (before the lift).
        SQLConf conf = SQLConf.get();
        int maxRecords = conf.arrowMaxRecordsPerBatch();
        long maxBytes = conf.arrowMaxBytesPerBatch();
        if (maxRecords <= 0 || maxBytes >= Integer.MAX_VALUE) {
          delegate.writeAll(records); // nothing to hold, or no row cap to cut by: Spark's way
          return;
        }
        rows = padded(records, plan, maxRecords, maxBytes);
        lift.put(PADDING, plan.markerName);
      }
      Properties props = task.getLocalProperties();
      Map<String, String> before = new LinkedHashMap<>();
      for (String key : lift.keySet()) {
        before.put(key, props.getProperty(key));
      }
      Runnable restore =
          () -> {
            for (Map.Entry<String, String> e : before.entrySet()) {
              if (e.getValue() == null) {
                props.remove(e.getKey());
              } else {
                props.setProperty(e.getKey(), e.getValue());
              }
            }
          };
      lift.forEach(props::setProperty);
      LIFTED.incrementAndGet();
      Iterator<InternalRow> source = rows;
      try {
        delegate.writeAll(
            new Iterator<InternalRow>() {
              private boolean restored;

              @Override
              public boolean hasNext() {
                restoreOnce();
                return source.hasNext();
              }

              @Override
              public InternalRow next() {
                restoreOnce();
                return source.next();
              }

              private void restoreOnce() {
                if (!restored) {
                  restored = true;
                  restore.run();
                }
              }
            });
      } finally {
        restore.run();
      }
    }

    @Override
    public void write(InternalRow record) throws IOException {
      delegate.write(record);
    }

    @Override
    public void write(InternalRow metadata, InternalRow record) throws IOException {
      delegate.write(metadata, record);
    }

    @Override
    public WriterCommitMessage commit() throws IOException {
      return delegate.commit();
    }

    @Override
    public void abort() throws IOException {
      delegate.abort();
    }

    @Override
    public void close() throws IOException {
      delegate.close();
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
      return delegate.currentMetricsValues();
    }
  }
}
