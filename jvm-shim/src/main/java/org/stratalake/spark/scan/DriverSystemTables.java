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
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
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
    return () -> {
      String ipc;
      try {
        ipc =
            PythonBridge.call(
                Operation.READ_SYSTEM_TABLE,
                new ReadSystemTable(sourceOptions, PythonBridge.JSON.readTree(schema.json())));
      } catch (JsonProcessingException e) {
        throw new IllegalStateException("stratalake: Spark's schema JSON did not parse", e);
      }
      if (ipc == null) {
        return distributed.get().build();
      }
      return new Rows(schema, decode(ipc));
    };
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
   * job. (A scan of one input partition was tried too: Spark still shuffles before an aggregate
   * over it, and a plain {@code SELECT} then costs a job.)
   */
  private record Rows(StructType readSchema, InternalRow[] rows) implements LocalScan {
    @Override
    public String description() {
      return "stratalake system table (answered on the driver)";
    }
  }
}
