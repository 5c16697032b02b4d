package org.stratalake.spark.scan;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;
import org.apache.spark.JobArtifactSet$;
import org.apache.spark.JobArtifactState;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructType;
import scala.Option;

/**
 * Spark's Python reader factories, reused across queries with the same inputs.
 *
 * <p>Building one costs two Python planner round trips (instantiate the data source, then create
 * and pickle its reader). With the splits planned by the bridge (option
 * "stratalake.scan.planned"), the pickled reader is a pure function of its inputs: the reader
 * options (table coordinates, snapshot for time travel, pushed filters, limit), the read schema,
 * the session's SQL settings Spark sends to the planner (Arrow batch size, filter pushdown,
 * binary handling: all explicitly set settings are in the key), and the session and job
 * artifacts the factory records. Table state (latest snapshot, schema) is not in the reader: the
 * splits carry what to read and each task loads the table itself, so a cached factory never
 * serves stale data.
 */
public final class ReaderFactoryCache {
  private static final int MAX_ENTRIES = 64;

  private static final Map<String, PartitionReaderFactory> CACHE =
      new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, PartitionReaderFactory> eldest) {
          return size() > MAX_ENTRIES;
        }
      };

  private ReaderFactoryCache() {}

  static PartitionReaderFactory get(
      Map<String, String> options, StructType readSchema, Supplier<PartitionReaderFactory> build) {
    String key = key(options, readSchema);
    if (key == null) {
      return build.get();
    }
    synchronized (CACHE) {
      PartitionReaderFactory hit = CACHE.get(key);
      if (hit != null) {
        return hit;
      }
    }
    PartitionReaderFactory built = build.get();
    synchronized (CACHE) {
      CACHE.put(key, built);
    }
    return built;
  }

  /** The inputs of the pickled reader; null when they cannot all be named (then: no cache). */
  private static String key(Map<String, String> options, StructType readSchema) {
    if (!"true".equals(options.get("stratalake.scan.planned"))) {
      return null;
    }
    Option<org.apache.spark.sql.classic.SparkSession> session =
        org.apache.spark.sql.classic.SparkSession$.MODULE$.getActiveSession();
    if (session.isEmpty()) {
      return null;
    }
    Option<JobArtifactState> artifacts = JobArtifactSet$.MODULE$.getCurrentJobArtifactState();
    StringBuilder sb = new StringBuilder();
    sb.append(session.get().sessionUUID()).append('\u0000');
    sb.append(artifacts.isDefined() ? artifacts.get().uuid() : "").append('\u0000');
    sb.append(new TreeMap<>(options)).append('\u0000');
    sb.append(readSchema.json()).append('\u0000');
    sb.append(new TreeMap<>(scala.jdk.javaapi.CollectionConverters.asJava(SQLConf.get().getAllConfs())));
    return sb.toString();
  }
}
