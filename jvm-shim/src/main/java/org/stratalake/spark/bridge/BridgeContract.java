package org.stratalake.spark.bridge;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.util.List;
import java.util.Map;

/**
 * The bridge contract as the JVM holds it: the protocol version sent with every request, and
 * {@link #describe()}, which renders every operation and message in the vocabulary of Python's
 * {@code bridge_contract.describe()} so a test can compare the two field by field.
 */
public final class BridgeContract {
  /** Python's {@code bridge_contract.PROTOCOL_VERSION}; raised on any change of a message. */
  public static final int PROTOCOL_VERSION = 13;

  private BridgeContract() {}

  /** {@code {"protocol", "operations": {name: {"request", "reply"}}, "messages": {name: {field: type}}}}. */
  public static String describe() {
    ObjectNode out = PythonBridge.JSON.createObjectNode();
    out.put("protocol", PROTOCOL_VERSION);
    ObjectNode operations = out.putObject("operations");
    ObjectNode messages = out.putObject("messages");
    for (Operation<?, ?> op : Operation.ALL) {
      ObjectNode o = operations.putObject(op.name());
      o.put("request", op.request().getSimpleName());
      o.put("reply", typeName(op.reply(), op.nullableReply()));
      addMessages(op.request(), messages);
      addMessages(op.reply(), messages);
    }
    return out.toString();
  }

  /** {@code {operation: calls}}: the bridge calls this JVM made so far, per operation. */
  public static String callCounts() {
    ObjectNode out = PythonBridge.JSON.createObjectNode();
    PythonBridge.CALLS.forEach((op, n) -> out.put(op, n.sum()));
    return out.toString();
  }

  /** The JSON key of a record component: its {@code @JsonProperty} name, else snake_case. */
  static String jsonName(RecordComponent c) {
    com.fasterxml.jackson.annotation.JsonProperty p =
        c.getAccessor().getAnnotation(com.fasterxml.jackson.annotation.JsonProperty.class);
    if (p == null) {
      p = c.getAnnotation(com.fasterxml.jackson.annotation.JsonProperty.class);
    }
    if (p != null) {
      return p.value();
    }
    StringBuilder sb = new StringBuilder();
    for (char ch : c.getName().toCharArray()) {
      if (Character.isUpperCase(ch)) {
        sb.append('_').append(Character.toLowerCase(ch));
      } else {
        sb.append(ch);
      }
    }
    return sb.toString();
  }

  private static void addMessages(Type type, ObjectNode messages) {
    if (type instanceof ParameterizedType p) {
      for (Type arg : p.getActualTypeArguments()) {
        addMessages(arg, messages);
      }
    } else if (type instanceof Class<?> c && c.isRecord() && !messages.has(c.getSimpleName())) {
      ObjectNode fields = messages.putObject(c.getSimpleName());
      for (RecordComponent rc : c.getRecordComponents()) {
        boolean nullable = rc.isAnnotationPresent(Nullable.class);
        fields.put(jsonName(rc), typeName(rc.getGenericType(), nullable));
        addMessages(rc.getGenericType(), messages);
      }
    }
  }

  private static String typeName(Type type, boolean nullable) {
    String name = typeName(type);
    return nullable ? name + " | None" : name;
  }

  private static String typeName(Type type) {
    if (type instanceof ParameterizedType p) {
      Type[] args = p.getActualTypeArguments();
      if (p.getRawType() == List.class) {
        return "list[" + typeName(args[0]) + "]";
      }
      if (p.getRawType() == Map.class && args[0] == String.class) {
        return "dict[str, " + typeName(args[1]) + "]";
      }
    } else if (type instanceof Class<?> c) {
      if (c == String.class || c == byte[].class) {
        return "str";  // bytes travel as base64 strings, which Jackson decodes
      }
      if (c == int.class || c == Integer.class || c == long.class || c == Long.class) {
        return "int";
      }
      if (c == boolean.class || c == Boolean.class) {
        return "bool";
      }
      if (c == Void.class) {
        return "None";
      }
      if (JsonNode.class.isAssignableFrom(c)) {
        return "json";
      }
      if (c.isRecord()) {
        return c.getSimpleName();
      }
    }
    throw new IllegalStateException("stratalake bridge: no contract type for " + type);
  }
}
