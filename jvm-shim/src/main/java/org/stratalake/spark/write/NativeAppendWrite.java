package org.stratalake.spark.write;

import org.stratalake.spark.fs.LocalLinks;
import java.io.IOException;
import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import net.razorvine.pickle.IObjectDeconstructor;
import net.razorvine.pickle.Pickler;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.hadoop.ParquetFileWriter;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.api.WriteSupport;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.LocalOutputFile;
import org.apache.parquet.io.OutputFile;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.CharVarcharUtils;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NullOrdering;
import org.apache.spark.sql.connector.expressions.SortDirection;
import org.apache.spark.sql.connector.expressions.SortOrder;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteSummary;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.execution.datasources.parquet.ParquetWriteSupport;
import org.apache.spark.sql.execution.datasources.v2.python.PythonWriterCommitMessage;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.stratalake.spark.bridge.Messages.NativeAppendPlan;
import org.stratalake.spark.bridge.Messages.NativeColumn;

/**
 * Rows of a bucket-unaware append table written by Spark's own Parquet writer
 * ({@code ParquetWriteSupport} over parquet-mr), committed by Python.
 *
 * <p>An append data file is a plain Parquet file of the table's columns, so the JVM can write
 * it without any table-format logic except where it goes: {@code <table>/<partition
 * path>/bucket-0/data-<uuid>-<n>.parquet}. Python's planner decides whether a table qualifies
 * and sends the settings ({@code native_append} in the table's description:
 * spark/native_write.py); each task writes its rows, rolling files at {@code target-file-size},
 * and reports the files as a pickled {@code stratalake.spark.native_write.NativeFiles} message,
 * so the Python data source's own commit (every overwrite mode, one snapshot) takes them; it
 * reads each footer for the manifest's statistics and refuses a file that is not where Python
 * would put it. The partition directory is formatted here as Python's {@code
 * PartitionCodec.path} formats it, for the partition types Python allows (strings, integers,
 * booleans, dates); this, with the bucket hash, is where the shim's no-format-logic rule bends
 * (ARCHITECTURE.md).
 */
public final class NativeAppendWrite {
  /** SQL setting: write append tables with Spark's Parquet writer when they qualify (default true). */
  static final String ENABLED = "stratalake.write.native.enabled";

  private static final String MESSAGE_MODULE = "stratalake.spark.native_write";
  private static final String MESSAGE_CLASS = "NativeFiles";

  private NativeAppendWrite() {}

  /**
   * The write settings when this write may go native: Python's plan exists, the session allows
   * it, and Spark's input has exactly the table's columns (by name and order). Null otherwise.
   */
  static Settings settings(NativeAppendPlan plan, StructType input) {
    if (plan == null) {
      return null;
    }
    String enabled = SQLConf.get().getConfString(ENABLED, "true");
    if (!Boolean.parseBoolean(enabled.trim())) {
      return null;
    }
    List<NativeColumn> columns = plan.columns();
    StructField[] fields = input.fields();
    if (columns.size() != fields.length) {
      return null;
    }
    StructType sparkSchema = (StructType) CharVarcharUtils.replaceCharVarcharWithStringInSchema(input);
    StructField[] out = new StructField[fields.length];
    for (int i = 0; i < fields.length; i++) {
      NativeColumn c = columns.get(i);
      if (!c.name().equals(fields[i].name())) {
        return null;
      }
      // The file's column is optional or required as the table's field is (Spark has checked
      // NOT NULL columns before the write).
      StructField f = sparkSchema.fields()[i];
      out[i] = new StructField(f.name(), f.dataType(), c.nullable(), Metadata.empty());
    }
    List<String> partitionKeys = plan.partitionKeys();
    StructType schema = new StructType(out);
    int[] partitionIndex = new int[partitionKeys.size()];
    DataType[] partitionTypes = new DataType[partitionKeys.size()];
    for (int i = 0; i < partitionIndex.length; i++) {
      partitionIndex[i] = schema.fieldIndex(partitionKeys.get(i));
      partitionTypes[i] = schema.fields()[partitionIndex[i]].dataType();
    }
    return new Settings(
        plan.location(),
        plan.schemaId(),
        schema.json(),
        partitionKeys.toArray(new String[0]),
        partitionIndex,
        partitionTypes,
        plan.defaultPartition(),
        plan.compression(),
        plan.zstdLevel(),
        plan.targetFileSize(),
        plan.rowGroupSize(),
        plan.pageSize() == null ? 0 : plan.pageSize());
  }

  /** Rows sorted by the partition columns within each task, as Spark's own file writes sort them. */
  static SortOrder[] ordering(Settings settings) {
    SortOrder[] out = new SortOrder[settings.partitionKeys.length];
    for (int i = 0; i < out.length; i++) {
      out[i] =
          Expressions.sort(
              Expressions.column(settings.partitionKeys[i]),
              SortDirection.ASCENDING,
              NullOrdering.NULLS_FIRST);
    }
    return out;
  }

  /** The Python batch write, with tasks that write Parquet in the JVM; the commit stays Python's. */
  static BatchWrite batch(BatchWrite python, Settings settings) {
    return new Batch(python, settings);
  }

  /** Everything a task needs; serialized into every task. */
  static final class Settings implements Serializable {
    private static final long serialVersionUID = 1L;
    final String location;
    final long schemaId;
    final String schemaJson;
    final String[] partitionKeys;
    final int[] partitionIndex;
    final DataType[] partitionTypes;
    final String defaultPartition;
    final String compression;
    final int zstdLevel;
    final long targetFileSize;
    final long rowGroupSize;
    /** Bytes per data page; 0: parquet-mr's default. */
    final int pageSize;

    Settings(
        String location,
        long schemaId,
        String schemaJson,
        String[] partitionKeys,
        int[] partitionIndex,
        DataType[] partitionTypes,
        String defaultPartition,
        String compression,
        int zstdLevel,
        long targetFileSize,
        long rowGroupSize,
        int pageSize) {
      this.location = location;
      this.schemaId = schemaId;
      this.schemaJson = schemaJson;
      this.partitionKeys = partitionKeys;
      this.partitionIndex = partitionIndex;
      this.partitionTypes = partitionTypes;
      this.defaultPartition = defaultPartition;
      this.compression = compression;
      this.zstdLevel = zstdLevel;
      this.targetFileSize = targetFileSize;
      this.rowGroupSize = rowGroupSize;
      this.pageSize = pageSize;
    }
  }

  private static final class Batch implements BatchWrite {
    private final BatchWrite python;
    private final Settings settings;

    Batch(BatchWrite python, Settings settings) {
      this.python = python;
      this.settings = settings;
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
      // Spark's Python batch write creates its Python writer here; the commit runs on it.
      python.createBatchWriterFactory(info);
      return new Factory(settings);
    }

    @Override
    public boolean useCommitCoordinator() {
      return true; // one attempt's files per task reach the commit
    }

    @Override
    public void onDataWriterCommit(WriterCommitMessage message) {
      python.onDataWriterCommit(message);
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
      python.commit(messages);
    }

    @Override
    public void commit(WriterCommitMessage[] messages, WriteSummary summary) {
      python.commit(messages, summary);
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
      python.abort(messages); // Python deletes the files the messages list
    }
  }

  private static final class Factory implements DataWriterFactory {
    private static final long serialVersionUID = 1L;
    private final Settings settings;

    Factory(Settings settings) {
      this.settings = settings;
    }

    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
      return new Writer(settings);
    }
  }

  /**
   * One task's writer: one open file at a time (rows arrive sorted by partition), a new file
   * when the partition changes or the file reaches {@code target-file-size}. Sequence numbers
   * run on across the task's files, as a Python writer numbers its rows. Holds one row group of
   * encoded pages at most (parquet-mr's buffer), never the task's rows.
   */
  private static final class Writer implements DataWriter<InternalRow> {
    private static final int SIZE_CHECK_ROWS = 4096;
    /** Rows the column encodings are chosen from (as the Python writer samples its first rows). */
    private static final int SAMPLE_ROWS = 4096;
    private final Settings settings;
    private final Configuration conf;
    private final String uuid = UUID.randomUUID().toString();
    private final List<Map<String, Object>> files = new ArrayList<>();
    private final List<String> paths = new ArrayList<>();
    private int counter = 0;
    private long nextSequence = 0;
    private ParquetWriter<InternalRow> current;
    private Object[] currentPartition; // null: no file open
    private Map<String, Object> currentFile;
    private long currentRows;
    /** The first rows, until {@link #chooseEncodings} ran; then null. */
    private List<InternalRow> sample = new ArrayList<>();
    /** Per column, whether it is dictionary-encoded; null until chosen. */
    private Map<String, Boolean> dictionary;

    Writer(Settings settings) {
      this.settings = settings;
      this.conf = new Configuration(false);
      conf.set(ParquetWriteSupport.SPARK_ROW_SCHEMA(), settings.schemaJson);
      // ParquetWriteSupport reads these as Spark's own Parquet writes set them; no field ids
      // (Paimon's readers and ours match columns by name), timestamps never reach this path.
      conf.set(SQLConf.PARQUET_WRITE_LEGACY_FORMAT().key(), "false");
      conf.set(SQLConf.PARQUET_OUTPUT_TIMESTAMP_TYPE().key(), "TIMESTAMP_MICROS");
      conf.set(SQLConf.PARQUET_FIELD_ID_WRITE_ENABLED().key(), "false");
      conf.set(SQLConf.PARQUET_ANNOTATE_VARIANT_LOGICAL_TYPE().key(), "false");
      conf.set(SQLConf.LEGACY_PARQUET_NANOS_AS_LONG().key(), "false");
      // Dates are written as they are (proleptic Gregorian), as Paimon and pyarrow write them.
      conf.set(SQLConf.PARQUET_REBASE_MODE_IN_WRITE().key(), "CORRECTED");
      conf.set("parquet.compression.codec.zstd.level", Integer.toString(settings.zstdLevel));
    }

    @Override
    public void write(InternalRow row) throws IOException {
      if (dictionary == null) {
        // (rows reuse buffers: keep copies until the encodings are chosen)
        sample.add(row.copy());
        if (sample.size() >= SAMPLE_ROWS) {
          chooseEncodings();
        }
        return;
      }
      writeRow(row);
    }

    /**
     * Dictionary encoding for the string and binary columns the Python writer would
     * dictionary-encode (few distinct values among the task's first rows); every other column
     * without a dictionary. parquet-mr's default (a dictionary for every column, abandoned once it
     * outgrows its page) builds a dictionary for high-cardinality columns only to abandon it,
     * leaving their first pages dictionary-encoded and the rest plain. Both writers of append
     * files encode alike this way. (Measured: no change to the speed of the load or of scans,
     * BENCHMARKS.md 2026-11-24 06:38 UTC.)
     */
    private void chooseEncodings() throws IOException {
      StructType schema = (StructType) DataType.fromJson(settings.schemaJson);
      dictionary = new HashMap<>();
      int n = sample.size();
      for (int c = 0; c < schema.fields().length; c++) {
        DataType type = schema.fields()[c].dataType();
        boolean dict = false; // (parquet-mr bit-packs booleans: no dictionary to choose)
        if (type instanceof StringType || type instanceof BinaryType) {
          Set<Object> distinct = new HashSet<>();
          for (InternalRow r : sample) {
            if (!r.isNullAt(c)) {
              distinct.add(
                  type instanceof StringType
                      ? r.getUTF8String(c)
                      : java.nio.ByteBuffer.wrap(r.getBinary(c)));
            }
          }
          dict = distinct.size() <= Math.max(n / 4, 1);
        }
        dictionary.put(schema.fields()[c].name(), dict);
      }
      List<InternalRow> rows = sample;
      sample = null;
      for (InternalRow r : rows) {
        writeRow(r);
      }
    }

    private void writeRow(InternalRow row) throws IOException {
      if (currentPartition == null || !samePartition(row)) {
        closeFile();
        openFile(row);
      }
      current.write(row);
      currentRows++;
      if (currentRows % SIZE_CHECK_ROWS == 0 && current.getDataSize() >= settings.targetFileSize) {
        Object[] partition = currentPartition;
        closeFile();
        openFile(partition);
      }
    }

    private boolean samePartition(InternalRow row) {
      for (int i = 0; i < settings.partitionIndex.length; i++) {
        int idx = settings.partitionIndex[i];
        Object v = row.isNullAt(idx) ? null : row.get(idx, settings.partitionTypes[i]);
        Object cur = currentPartition[i];
        if (v == null ? cur != null : !v.equals(cur)) {
          return false;
        }
      }
      return true;
    }

    private void openFile(InternalRow row) throws IOException {
      Object[] values = new Object[settings.partitionIndex.length];
      for (int i = 0; i < values.length; i++) {
        int idx = settings.partitionIndex[i];
        Object v = row.isNullAt(idx) ? null : row.get(idx, settings.partitionTypes[i]);
        values[i] = v instanceof UTF8String ? ((UTF8String) v).clone() : v; // rows reuse buffers
      }
      openFile(values);
    }

    private void openFile(Object[] partition) throws IOException {
      String directory = settings.location;
      String partitionPath = partitionPath(settings, partition);
      if (!partitionPath.isEmpty()) {
        directory += "/" + partitionPath;
      }
      directory += "/bucket-0";
      // Every directory of the file's path inside the table: a linked partition or bucket
      // directory would lead this writer outside the table.
      LocalLinks.refuseWriteInto(directory);
      if (!partitionPath.isEmpty()) {
        String[] levels = partitionPath.split("/");
        String at = settings.location;
        for (String level : levels) {
          at += "/" + level;
          LocalLinks.refuseWriteInto(at);
        }
      }
      Files.createDirectories(Paths.get(directory));
      String path = directory + "/data-" + uuid + "-" + (counter++) + ".parquet";
      paths.add(path);
      Builder builder =
          new Builder(new LocalOutputFile(Paths.get(path)))
              .withConf(conf)
              .withWriteMode(ParquetFileWriter.Mode.CREATE)
              .withCompressionCodec(CompressionCodecName.valueOf(settings.compression))
              .withRowGroupSize(settings.rowGroupSize);
      if (settings.pageSize > 0) {
        // The table's 'parquet.page.size', as Paimon's writer hands it to parquet-mr (whose
        // 20,000-row page limit still applies, as in Paimon's files).
        builder = builder.withPageSize(settings.pageSize);
      }
      for (Map.Entry<String, Boolean> e : dictionary.entrySet()) {
        builder = builder.withDictionaryEncoding(e.getKey(), e.getValue());
      }
      current = builder.build();
      currentPartition = partition;
      currentRows = 0;
      currentFile = new HashMap<>();
      currentFile.put("path", path);
      List<Object> values = new ArrayList<>();
      for (int i = 0; i < partition.length; i++) {
        values.add(pythonValue(partition[i]));
      }
      currentFile.put("partition", values);
      currentFile.put("first_sequence", nextSequence);
    }

    private void closeFile() throws IOException {
      if (current == null) {
        return;
      }
      ParquetWriter<InternalRow> w = current;
      current = null;
      w.close();
      currentFile.put("rows", currentRows);
      nextSequence += currentRows;
      if (currentRows > 0) {
        files.add(currentFile);
      } else {
        Files.deleteIfExists(Paths.get((String) currentFile.get("path")));
      }
      currentFile = null;
    }

    @Override
    public WriterCommitMessage commit() throws IOException {
      if (dictionary == null) {
        chooseEncodings();
      }
      closeFile();
      Map<String, Object> message = new HashMap<>();
      message.put("files", files);
      message.put("schema_id", settings.schemaId);
      return new PythonWriterCommitMessage(pickle(message));
    }

    @Override
    public void abort() {
      try {
        if (current != null) {
          current.close();
        }
      } catch (IOException | RuntimeException e) {
        // the file goes below either way
      }
      current = null;
      for (String p : paths) {
        try {
          Files.deleteIfExists(Paths.get(p));
        } catch (IOException e) {
          // left as an orphan; remove_orphan_files finds it
        }
      }
    }

    @Override
    public void close() throws IOException {
      if (current != null) {
        abort();
      }
    }
  }

  private static Object pythonValue(Object v) {
    if (v instanceof UTF8String) {
      return v.toString();
    }
    if (v instanceof Byte || v instanceof Short) {
      return ((Number) v).intValue();
    }
    return v; // Integer (int, date as epoch days), Long, Boolean, null
  }

  /**
   * {@code k1=v1/k2=v2} as Paimon names partition directories (and Python's {@code
   * PartitionCodec.path}): control characters and {@code "#%'*\/:=?\\{}[]^} and DEL escaped as
   * {@code %XX}, everything else kept; null, empty and whitespace-only values as the table's
   * default partition name.
   */
  static String partitionPath(Settings settings, Object[] values) {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < values.length; i++) {
      if (i > 0) {
        out.append('/');
      }
      Object v = values[i];
      String text = null;
      if (v != null) {
        text = settings.partitionTypes[i] instanceof DateType
            ? LocalDate.ofEpochDay(((Number) v).longValue()).toString()
            : v.toString(); // strings, integers, booleans ("true"/"false")
      }
      if (text == null || blank(text)) {
        text = settings.defaultPartition;
      }
      escape(settings.partitionKeys[i], out);
      out.append('=');
      escape(text, out);
    }
    return out.toString();
  }

  private static boolean blank(String text) {
    for (int i = 0; i < text.length(); i++) {
      if (!Character.isWhitespace(text.charAt(i))) {
        return false;
      }
    }
    return true;
  }

  private static final String ESCAPED = "\"#%'*/:=?\\\u007F{}[]^";

  private static void escape(String text, StringBuilder out) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < 0x20 || ESCAPED.indexOf(c) >= 0) {
        out.append('%').append(String.format("%02X", (int) c));
      } else {
        out.append(c);
      }
    }
  }

  /** The message as Python's {@code NativeFiles(files, schema_id)}: GLOBAL, the args, REDUCE. */
  private static byte[] pickle(Map<String, Object> message) throws IOException {
    return new Pickler(false).dumps(new Message(message));
  }

  static {
    // Once per class loader: the pickler's registry is a plain static map.
    Pickler.registerCustomDeconstructor(Message.class, Message.DECONSTRUCTOR);
  }

  private static final class Message {
    static final IObjectDeconstructor DECONSTRUCTOR =
        new IObjectDeconstructor() {
          @Override
          public String getModule() {
            return MESSAGE_MODULE;
          }

          @Override
          public String getName() {
            return MESSAGE_CLASS;
          }

          @Override
          public Object[] deconstruct(Object o) {
            Map<String, Object> m = ((Message) o).fields;
            return new Object[] {m.get("files"), m.get("schema_id")};
          }
        };
    final Map<String, Object> fields;

    Message(Map<String, Object> fields) {
      this.fields = fields;
    }
  }

  /** parquet-mr's writer over Spark's {@code ParquetWriteSupport} (InternalRow in, Spark's encoding). */
  private static final class Builder extends ParquetWriter.Builder<InternalRow, Builder> {
    Builder(OutputFile file) {
      super(file);
    }

    @Override
    protected Builder self() {
      return this;
    }

    @Override
    protected WriteSupport<InternalRow> getWriteSupport(Configuration conf) {
      return new ParquetWriteSupport();
    }
  }
}
