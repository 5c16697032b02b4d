package org.stratalake.spark.scan;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.v2.FilePartitionReaderFactory;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;
import org.stratalake.spark.bridge.Messages.ChangesPlan;
import org.stratalake.spark.bridge.Messages.NativeFile;
import org.stratalake.spark.bridge.Operation;
import org.stratalake.spark.bridge.PythonBridge;
import org.stratalake.spark.fs.LocalLinks;

/**
 * Incremental reads of {@code $audit_log} ({@code incremental-between}..., delta or changelog
 * mode) by Spark's own Parquet reader. Those reads return the records of change files exactly as
 * stored, nothing merged, so Python only plans (stratalake.spark.native_changes: which files, in
 * which input partitions, or null when it must read them itself) and the files are read here,
 * whole, with the stored {@code _VALUE_KIND} byte shown as the {@code rowkind} string. The columnar
 * Python read of the same records cost one Python task per bucket (~60 ms of Python work each on
 * 2 cores, most of a 1M-record read's 2 s).
 */
final class NativeChanges {
  static final String KIND_COLUMN = "rowkind";
  static final String FILE_KIND_COLUMN = "_VALUE_KIND";

  private NativeChanges() {}

  /**
   * The input partitions of a native read of {@code readSchema} (a Python data source's source
   * options name the {@code $audit_log} table and its read options), or null when Python reads.
   */
  static List<List<NativeFile>> plan(Map<String, String> sourceOptions, StructType readSchema) {
    ChangesPlan plan =
        PythonBridge.call(
            Operation.PLAN_CHANGES,
            new org.stratalake.spark.bridge.Messages.PlanChanges(
                sourceOptions, List.of(readSchema.fieldNames()), StrataLakeScan.taskSlots()));
    return plan == null ? null : plan.partitions();
  }

  static InputPartition[] partitions(List<List<NativeFile>> plan) {
    InputPartition[] out = new InputPartition[plan.size()];
    for (int i = 0; i < out.length; i++) {
      List<NativeFile> files = plan.get(i);
      String[] paths = new String[files.size()];
      long[] sizes = new long[files.size()];
      for (int j = 0; j < paths.length; j++) {
        paths[j] = files.get(j).path();
        sizes[j] = files.get(j).size();
      }
      out[i] = new Files(paths, sizes);
    }
    return out;
  }

  /** The reader factory of a native read of {@code readSchema} (built on the driver). */
  static PartitionReaderFactory readerFactory(StructType readSchema) {
    int kind = -1;
    StructType file = new StructType();
    for (int i = 0; i < readSchema.fields().length; i++) {
      StructField f = readSchema.fields()[i];
      if (f.name().equals(KIND_COLUMN)) {
        kind = i;
        file = file.add(FILE_KIND_COLUMN, DataTypes.ByteType, false);
      } else {
        file = file.add(f);
      }
    }
    return new Factory(NativeParquet.readerFactory(file, new Filter[0]), kind);
  }

  /** One input partition: change files read one after the other, whole. */
  static final class Files implements InputPartition {
    private static final long serialVersionUID = 1L;
    final String[] paths;
    final long[] sizes;

    Files(String[] paths, long[] sizes) {
      this.paths = paths;
      this.sizes = sizes;
    }
  }

  private static final class Factory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;
    private final FilePartitionReaderFactory parquet;
    private final int kind;

    Factory(FilePartitionReaderFactory parquet, int kind) {
      this.parquet = parquet;
      this.kind = kind;
    }

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
      return true;
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      throw new UnsupportedOperationException("stratalake: native change reads are columnar");
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
      return new Reader(parquet, (Files) partition, kind);
    }
  }

  private static final class Reader implements PartitionReader<ColumnarBatch> {
    private final FilePartitionReaderFactory parquet;
    private final Files files;
    private final int kind;
    private int next;
    private PartitionReader<ColumnarBatch> current;
    private ColumnarBatch value;

    Reader(FilePartitionReaderFactory parquet, Files files, int kind) {
      this.parquet = parquet;
      this.files = files;
      this.kind = kind;
    }

    @Override
    public boolean next() throws IOException {
      while (true) {
        if (current != null) {
          if (current.next()) {
            ColumnarBatch batch = current.get();
            if (batch.numRows() == 0) {
              continue;
            }
            value = kind < 0 ? batch : withKinds(batch);
            return true;
          }
          current.close();
          current = null;
        }
        if (next >= files.paths.length) {
          return false;
        }
        String path = files.paths[next];
        long size = files.sizes[next++];
        LocalLinks.refuseRead(path);
        PartitionedFile file = NativeParquet.wholeFile(path, size);
        current = parquet.buildColumnarReader(file);
      }
    }

    /** The batch with its stored kind bytes shown as row kind strings (a view, no copy). */
    private ColumnarBatch withKinds(ColumnarBatch batch) {
      ColumnVector[] columns = new ColumnVector[batch.numCols()];
      for (int i = 0; i < columns.length; i++) {
        columns[i] = i == kind ? new KindVector(batch.column(i)) : batch.column(i);
      }
      return new ColumnarBatch(columns, batch.numRows());
    }

    @Override
    public ColumnarBatch get() {
      return value;
    }

    @Override
    public void close() throws IOException {
      if (current != null) {
        current.close();
        current = null;
      }
    }
  }

  /**
   * Paimon's row kind bytes (0..3, as {@code RowKind.toByteValue}) as {@code $audit_log}'s
   * strings. The source belongs to the Parquet reader, valid as long as its batch.
   */
  static final class KindVector extends ColumnVector {
    private static final UTF8String[] KINDS = {
      UTF8String.fromString("+I"),
      UTF8String.fromString("-U"),
      UTF8String.fromString("+U"),
      UTF8String.fromString("-D")
    };
    private final ColumnVector bytes;

    KindVector(ColumnVector bytes) {
      super(DataTypes.StringType);
      this.bytes = bytes;
    }

    @Override
    public void close() {}

    @Override
    public boolean hasNull() {
      return bytes.hasNull();
    }

    @Override
    public int numNulls() {
      return bytes.numNulls();
    }

    @Override
    public boolean isNullAt(int rowId) {
      return bytes.isNullAt(rowId);
    }

    @Override
    public UTF8String getUTF8String(int rowId) {
      byte b = bytes.getByte(rowId);
      if (b < 0 || b >= KINDS.length) {
        throw new IllegalStateException(
            "stratalake: a change file holds row kind " + b + ", not one of Paimon's 0..3");
      }
      return KINDS[b];
    }

    @Override
    public boolean getBoolean(int rowId) {
      throw unsupported();
    }

    @Override
    public byte getByte(int rowId) {
      throw unsupported();
    }

    @Override
    public short getShort(int rowId) {
      throw unsupported();
    }

    @Override
    public int getInt(int rowId) {
      throw unsupported();
    }

    @Override
    public long getLong(int rowId) {
      throw unsupported();
    }

    @Override
    public float getFloat(int rowId) {
      throw unsupported();
    }

    @Override
    public double getDouble(int rowId) {
      throw unsupported();
    }

    @Override
    public ColumnarArray getArray(int rowId) {
      throw unsupported();
    }

    @Override
    public ColumnarMap getMap(int rowId) {
      throw unsupported();
    }

    @Override
    public Decimal getDecimal(int rowId, int precision, int scale) {
      throw unsupported();
    }

    @Override
    public byte[] getBinary(int rowId) {
      return getUTF8String(rowId).getBytes();
    }

    @Override
    public ColumnVector getChild(int ordinal) {
      throw unsupported();
    }

    private static UnsupportedOperationException unsupported() {
      return new UnsupportedOperationException("stratalake: the row kind column is a string");
    }
  }
}
