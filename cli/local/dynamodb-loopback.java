// DynamoDB Local on the loopback interface only. Its own command line (ServerRunner) has no
// bind-address option and Jetty's Server(port) listens on every interface, so this launcher
// builds the server from the same arguments, sets 127.0.0.1 on its connectors and starts it.
// cli/local/dynamodb-local.ts compiles it once (cached) and runs it with the jar and its libraries on the classpath.
import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

class LoopbackDynamoDB {
  public static void main(String[] args) throws Exception {
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
    Field field = DynamoDBProxyServer.class.getDeclaredField("server");
    field.setAccessible(true);
    Server server = (Server) field.get(proxy);
    Connector[] connectors = server.getConnectors();
    if (connectors.length == 0) throw new IllegalStateException("DynamoDB Local built no connector to bind");
    for (Connector c : connectors) {
      if (!(c instanceof ServerConnector)) throw new IllegalStateException("cannot set the bind address of " + c);
      ((ServerConnector) c).setHost("127.0.0.1");
    }
    proxy.start();
  }
}
