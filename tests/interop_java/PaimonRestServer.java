import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.HashMap;
import java.util.Map;
import org.apache.paimon.rest.RESTCatalogServer;
import org.apache.paimon.rest.auth.BearTokenAuthProvider;
import org.apache.paimon.rest.responses.ConfigResponse;

/**
 * Runs Apache Paimon's own REST catalog server (RESTCatalogServer from paimon-core's test jar, on
 * OkHttp's MockWebServer) so that other clients can be checked against Paimon's implementation.
 * Usage: java -cp ... PaimonRestServer DATA_PATH WAREHOUSE_NAME TOKEN
 * Prints "URL <url>" once serving; stops when its standard input is closed.
 */
public class PaimonRestServer {
  public static void main(String[] args) throws Exception {
    Map<String, String> defaults = new HashMap<>();
    defaults.put("prefix", "paimon");
    defaults.put("warehouse", args[1]);
    ConfigResponse config = new ConfigResponse(defaults, new HashMap<>());
    RESTCatalogServer server = new RESTCatalogServer(args[0], new BearTokenAuthProvider(args[2]), config, args[1]);
    server.start();
    System.out.println("URL " + server.getUrl());
    System.out.flush();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    while (in.readLine() != null) {
      // serve until the parent closes our stdin
    }
    server.shutdown();
  }
}
