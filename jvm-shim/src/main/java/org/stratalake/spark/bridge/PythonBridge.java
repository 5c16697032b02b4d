package org.stratalake.spark.bridge;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import net.razorvine.pickle.Pickler;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.python.PythonFunction;
import org.apache.spark.api.python.PythonUtils$;
import org.apache.spark.api.python.PythonWorkerUtils;
import org.apache.spark.sql.execution.python.PythonPlannerRunner;

/**
 * Sends one typed request ({@link Messages}) to the Python catalog and returns its typed reply.
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

  /**
   * Reads and writes the messages of {@link Messages}: snake_case keys, and strict both ways (an
   * unknown key, or a missing one, in a reply is an error: the two sides disagree).
   */
  static final ObjectMapper MESSAGES =
      JsonMapper.builder()
          .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
          .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
          .enable(DeserializationFeature.FAIL_ON_MISSING_CREATOR_PROPERTIES)
          .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
          .build();

  /** Calls per operation in this JVM (BridgeContract.callCounts), for tests and diagnostics. */
  static final Map<String, LongAdder> CALLS = new ConcurrentHashMap<>();

  /**
   * Calls {@code op} with {@code request} (every field sent, with the protocol version); returns
   * the reply, or throws the error Python answered, mapped onto Spark's exceptions.
   */
  public static <Q extends Record, R> R call(Operation<Q, R> op, Q request) {
    CALLS.computeIfAbsent(op.name(), k -> new LongAdder()).increment();
    ObjectNode args = MESSAGES.valueToTree(request);
    args.put("op", op.name());
    args.put("protocol", BridgeContract.PROTOCOL_VERSION);
    if (op != Operation.KEEP_ALIVE) {
      BridgeWarmUp.awaitInFlight();
    }
    BridgeKeepAlive.begin(op);
    try {
      return new Runner<>(function(), args.toString(), op).runInPython(useDaemon()).get(op);
    } finally {
      BridgeKeepAlive.end();
    }
  }

  /**
   * What one answer held: the result, or the error Python answered, or why it could not be read.
   * Read inside the runner, thrown after it (the worker's stream stays in step either way, so
   * Spark can reuse the worker).
   */
  record Answer<R>(R result, JsonNode error, RuntimeException failure) {
    R get(Operation<?, R> op) {
      if (failure != null) {
        throw failure;
      }
      if (error != null && !error.isNull()) {
        throw Errors.fromPython(error);
      }
      return result;
    }
  }

  /**
   * The answer read straight from the worker's stream into the reply type: no byte array, JSON
   * tree or String of the whole answer in between, so the driver holds a scan plan's splits once,
   * as records (base64 partitions decoded as they are read).
   */
  static <R> Answer<R> read(Operation<?, R> op, InputStream body) {
    R result = null;
    JsonNode error = null;
    try (JsonParser p = MESSAGES.getFactory().createParser(body)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        return new Answer<>(null, null, malformed(op, null));
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        p.nextToken();
        if (name.equals("result")) {
          try {
            result = MESSAGES.readValue(p, op.replyType());
          } catch (JsonMappingException e) {
            return new Answer<>(
                null,
                null,
                new IllegalStateException(
                    "stratalake bridge: the reply of " + op.name() + " does not follow the contract",
                    e));
          }
        } else if (name.equals("error")) {
          error = MESSAGES.readTree(p);
        } else {
          return new Answer<>(null, null, malformed(op, null));
        }
      }
    } catch (IOException e) {
      return new Answer<>(null, null, malformed(op, e));
    }
    return new Answer<>(result, error, null);
  }

  private static IllegalStateException malformed(Operation<?, ?> op, IOException cause) {
    return new IllegalStateException(
        "stratalake bridge returned malformed JSON for " + op.name()
            + (cause == null ? "" : ": " + cause.getMessage()),
        cause);
  }

  private static boolean useDaemon() {
    SparkEnv env = SparkEnv.get();
    return env == null || env.conf().getBoolean("spark.python.use.daemon", true);
  }

  private static final class Runner<R> extends PythonPlannerRunner<Answer<R>> {
    private final String request;
    private final Operation<?, R> op;

    Runner(PythonFunction func, String request, Operation<?, R> op) {
      super(func);
      this.request = request;
      this.op = op;
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
    public Answer<R> receiveFromPython(DataInputStream in) {
      try {
        int length = in.readInt();
        if (length == PYTHON_EXCEPTION_THROWN) {
          // Only errors outside the handlers' own try (e.g. an import failure) take this path.
          String trace = PythonWorkerUtils.readUTF(in);
          throw new IllegalStateException("stratalake Python bridge failed:\n" + trace);
        }
        Bounded body = new Bounded(in, length);
        Answer<R> answer = read(op, body);
        body.drain();  // whatever the parser left (nothing, for a well-formed answer)
        return answer;
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

  /**
   * The next {@code length} bytes of the worker's stream: the parser may read ahead, but not into
   * what follows the answer, and closing it leaves the worker's stream open.
   */
  private static final class Bounded extends InputStream {
    private final InputStream in;
    private long left;

    Bounded(InputStream in, long length) {
      this.in = in;
      this.left = length;
    }

    @Override
    public int read() throws IOException {
      if (left <= 0) {
        return -1;
      }
      int b = in.read();
      if (b >= 0) {
        left--;
      }
      return b;
    }

    @Override
    public int read(byte[] buf, int off, int len) throws IOException {
      if (left <= 0) {
        return -1;
      }
      int n = in.read(buf, off, (int) Math.min(len, left));
      if (n > 0) {
        left -= n;
      }
      return n;
    }

    void drain() throws IOException {
      while (left > 0) {
        long n = in.skip(left);
        if (n <= 0) {
          if (in.read() < 0) {
            throw new java.io.EOFException("stratalake bridge: the answer ended early");
          }
          n = 1;
        }
        left -= n;
      }
    }

    @Override
    public void close() {
      // The worker's stream is Spark's: it stays open for the next call.
    }
  }
}
