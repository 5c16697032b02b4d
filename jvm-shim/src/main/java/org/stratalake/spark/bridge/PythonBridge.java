package org.stratalake.spark.bridge;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import net.razorvine.pickle.Pickler;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.python.PythonFunction;
import org.apache.spark.api.python.PythonUtils$;
import org.apache.spark.api.python.PythonWorkerUtils;
import org.apache.spark.sql.execution.python.PythonPlannerRunner;

/**
 * Sends one JSON request to the Python catalog and returns its JSON answer.
 *
 * <p>Why Spark's driver-side {@code PythonPlannerRunner}: it is the machinery Spark itself uses to
 * plan Python data sources, so it works the same from PySpark and from the pure-JVM spark-sql
 * shell, needs no py4j callback server, and reuses Spark's pooled Python daemon (a few ms per
 * call once warm). A py4j callback would only work when a Python driver exists; a private
 * subprocess would duplicate worker management. The cost is an internal API pinned to Spark 4.3.
 *
 * <p>The worker module must start with "pyspark": Spark's daemon only imports such modules.
 */
public final class PythonBridge {
  public static final ObjectMapper JSON = new ObjectMapper();
  private static final String WORKER_MODULE = "pyspark_stratalake.bridge";
  private static final int PYTHON_EXCEPTION_THROWN = -2;

  // Built once: resolving the interpreter version spawns a process. Keeping the function (and so
  // its envVars) stable also keeps Spark on one pooled daemon.
  private static volatile PythonFunction function;

  private PythonBridge() {}

  private static PythonFunction function() {
    PythonFunction f = function;
    if (f == null) {
      synchronized (PythonBridge.class) {
        if (function == null) {
          function = PythonUtils$.MODULE$.createPythonFunction(new byte[0]);
        }
        f = function;
      }
    }
    return f;
  }

  /** Calls {@code op} with {@code args}; returns the "result" node or throws the mapped error. */
  public static JsonNode call(String op, ObjectNode args) {
    args.put("op", op);
    String response = new Runner(function(), args.toString()).runInPython(useDaemon());
    JsonNode answer;
    try {
      answer = JSON.readTree(response);
    } catch (IOException e) {
      throw new IllegalStateException("stratalake bridge returned malformed JSON: " + response, e);
    }
    JsonNode error = answer.get("error");
    if (error != null && !error.isNull()) {
      throw Errors.fromPython(error);
    }
    return answer.get("result");
  }

  private static boolean useDaemon() {
    SparkEnv env = SparkEnv.get();
    return env == null || env.conf().getBoolean("spark.python.use.daemon", true);
  }

  private static final class Runner extends PythonPlannerRunner<String> {
    private final String request;

    Runner(PythonFunction func, String request) {
      super(func);
      this.request = request;
    }

    @Override
    public String workerModule() {
      return WORKER_MODULE;
    }

    @Override
    public void writeToPython(DataOutputStream out, Pickler pickler) {
      PythonWorkerUtils.writeUTF(request, out);
    }

    @Override
    public String receiveFromPython(DataInputStream in) {
      try {
        int length = in.readInt();
        if (length == PYTHON_EXCEPTION_THROWN) {
          // Only errors outside the handlers' own try (e.g. an import failure) take this path.
          String trace = PythonWorkerUtils.readUTF(in);
          throw new IllegalStateException("stratalake Python bridge failed:\n" + trace);
        }
        byte[] bytes = PythonWorkerUtils.readBytes(length, in);
        return new String(bytes, StandardCharsets.UTF_8);
      } catch (IOException e) {
        // Rethrown unchecked-but-unwrapped so the runner's own handler reports a crashed worker.
        throw Runner.<RuntimeException>sneaky(e);
      }
    }

    @SuppressWarnings("unchecked")
    private static <E extends Throwable> E sneaky(Throwable e) throws E {
      throw (E) e;
    }
  }
}
