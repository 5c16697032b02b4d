package org.stratalake.spark.sql;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Supplier;

/**
 * Paimon's tag statements (its Spark SQL extensions grammar), rewritten into statements Spark's
 * own parser takes, so the tag logic and its errors stay in the Python procedures:
 *
 * <pre>
 * SHOW TAGS t                                   SELECT tag_name AS tag FROM t$tags ORDER BY tag
 * ALTER TABLE t CREATE TAG [IF NOT EXISTS] n    CALL sys.create_tag(...)
 *     [AS OF VERSION s] [RETAIN k DAYS|HOURS|MINUTES]
 * ALTER TABLE t [CREATE OR] REPLACE TAG n ...   CALL sys.replace_tag(...)
 * ALTER TABLE t DELETE TAG [IF EXISTS] a[, b]   CALL sys.delete_tag(...)
 * ALTER TABLE t RENAME TAG a TO b               CALL sys.rename_tag(...)
 * </pre>
 *
 * {@code t} is {@code [catalog.]database.table} or a bare table of the current database; the
 * procedure is called in the table's catalog (the current one when the name has none). Any other
 * statement is left to Spark.
 */
final class TagStatements {
  private TagStatements() {}

  private enum Kind {
    WORD,
    QUOTED, // `identifier`
    STRING,
    SYMBOL
  }

  private record Token(Kind kind, String text) {
    boolean is(String word) {
      return kind == Kind.WORD && text.equalsIgnoreCase(word);
    }
  }

  /**
   * The statement Spark should parse instead of {@code sql}, or null when it is not ours; {@code
   * currentCatalog} names the catalog of a table named without one.
   */
  static String rewrite(String sql, Supplier<String> currentCatalog) {
    List<Token> tokens = tokenize(sql);
    if (tokens == null || tokens.size() < 3) {
      return null;
    }
    Cursor c = new Cursor(tokens, sql);
    if (c.accept("SHOW") && c.accept("TAGS")) {
      List<String> table = c.multipart();
      c.end();
      List<String> parts = new ArrayList<>(table);
      parts.set(parts.size() - 1, parts.get(parts.size() - 1) + "$tags");
      return "SELECT tag_name AS tag FROM " + quoted(parts) + " ORDER BY tag_name";
    }
    c.pos = 0;
    if (!(c.accept("ALTER") && c.accept("TABLE"))) {
      return null;
    }
    int start = c.pos;
    List<String> table = c.tryMultipart();
    if (table == null) {
      return null;
    }
    boolean createOr = false;
    String verb;
    if (c.peek("CREATE") && c.peekAt(1, "OR")) {
      c.pos += 2;
      c.expect("REPLACE");
      createOr = true;
      verb = "REPLACE";
    } else if (c.peek("CREATE") || c.peek("REPLACE") || c.peek("DELETE") || c.peek("RENAME")) {
      verb = c.tokens.get(c.pos).text.toUpperCase(Locale.ROOT);
      c.pos++;
    } else {
      return null;
    }
    if (!c.accept("TAG")) {
      if (createOr) {
        throw c.error("TAG");
      }
      c.pos = start; // ALTER TABLE t REPLACE COLUMNS, RENAME TO ...: Spark's
      return null;
    }
    Call call = new Call(table, currentCatalog);
    switch (verb) {
      case "CREATE" -> {
        boolean ifNotExists = false;
        if (c.accept("IF")) {
          c.expect("NOT");
          c.expect("EXISTS");
          ifNotExists = true;
        }
        call.procedure = "create_tag";
        call.string("tag", c.identifier("a tag name"));
        tagOptions(c, call);
        if (ifNotExists) {
          call.raw("if_not_exists", "true");
        }
      }
      case "REPLACE" -> {
        call.procedure = "replace_tag";
        call.string("tag", c.identifier("a tag name"));
        tagOptions(c, call);
        if (createOr) {
          call.raw("create_if_missing", "true");
        }
      }
      case "DELETE" -> {
        boolean ifExists = false;
        if (c.accept("IF")) {
          c.expect("EXISTS");
          ifExists = true;
        }
        List<String> names = new ArrayList<>();
        names.add(c.identifier("a tag name"));
        while (c.acceptSymbol(",")) {
          names.add(c.identifier("a tag name"));
        }
        call.procedure = "delete_tag";
        call.string("tag", String.join(",", names));
        if (ifExists) {
          call.raw("if_exists", "true");
        }
      }
      default -> { // RENAME
        call.procedure = "rename_tag";
        call.string("tag", c.identifier("a tag name"));
        c.expect("TO");
        call.string("target_tag", c.identifier("the new tag name"));
      }
    }
    c.end();
    return call.sql();
  }

  /** {@code [AS OF VERSION n] [RETAIN n DAYS|HOURS|MINUTES]}. */
  private static void tagOptions(Cursor c, Call call) {
    if (c.accept("AS")) {
      c.expect("OF");
      c.expect("VERSION");
      call.raw("snapshot", c.number("a snapshot id") + "L");
    }
    if (c.accept("RETAIN")) {
      String n = c.number("a number of days, hours or minutes");
      String unit;
      if (c.accept("DAYS")) {
        unit = "d";
      } else if (c.accept("HOURS")) {
        unit = "h";
      } else if (c.accept("MINUTES")) {
        unit = "min";
      } else {
        throw c.error("DAYS, HOURS or MINUTES");
      }
      call.string("time_retained", n + " " + unit);
    }
  }

  /** A CALL of a {@code sys} procedure in the table's catalog, arguments by name. */
  private static final class Call {
    final List<String> table;
    final Supplier<String> currentCatalog;
    final List<String> args = new ArrayList<>();
    String procedure;

    Call(List<String> table, Supplier<String> currentCatalog) {
      this.table = table;
      this.currentCatalog = currentCatalog;
      // [catalog.]database.table: the catalog, if named, hosts the procedure; the rest is the
      // procedure's table argument (a bare name is one of the current database).
      int from = table.size() == 3 ? 1 : 0;
      string("table", String.join(".", table.subList(from, table.size())));
    }

    void string(String name, String value) {
      raw(name, literal(value));
    }

    void raw(String name, String value) {
      args.add(name + " => " + value);
    }

    String sql() {
      // A procedure name without a catalog would be looked up among functions, not catalogs.
      String catalog = table.size() == 3 ? table.get(0) : currentCatalog.get();
      return "CALL " + quote(catalog) + ".sys." + procedure + "(" + String.join(", ", args) + ")";
    }
  }

  private static final class Cursor {
    final List<Token> tokens;
    final String sql;
    int pos;

    Cursor(List<Token> tokens, String sql) {
      this.tokens = tokens;
      this.sql = sql;
    }

    boolean peek(String word) {
      return peekAt(0, word);
    }

    boolean peekAt(int offset, String word) {
      return pos + offset < tokens.size() && tokens.get(pos + offset).is(word);
    }

    boolean accept(String word) {
      if (peek(word)) {
        pos++;
        return true;
      }
      return false;
    }

    boolean acceptSymbol(String symbol) {
      if (pos < tokens.size()
          && tokens.get(pos).kind == Kind.SYMBOL
          && tokens.get(pos).text.equals(symbol)) {
        pos++;
        return true;
      }
      return false;
    }

    void expect(String word) {
      if (!accept(word)) {
        throw error(word);
      }
    }

    String identifier(String what) {
      if (pos < tokens.size()
          && (tokens.get(pos).kind == Kind.WORD || tokens.get(pos).kind == Kind.QUOTED)) {
        return tokens.get(pos++).text;
      }
      throw error(what);
    }

    String number(String what) {
      if (pos < tokens.size()
          && tokens.get(pos).kind == Kind.WORD
          && tokens.get(pos).text.chars().allMatch(Character::isDigit)) {
        return tokens.get(pos++).text;
      }
      throw error(what);
    }

    List<String> tryMultipart() {
      if (pos >= tokens.size() || tokens.get(pos).kind == Kind.SYMBOL) {
        return null;
      }
      return multipart();
    }

    List<String> multipart() {
      List<String> parts = new ArrayList<>();
      parts.add(identifier("a table name"));
      while (acceptSymbol(".")) {
        parts.add(identifier("a table name"));
      }
      if (parts.size() > 3) {
        throw new IllegalArgumentException(
            "stratalake: "
                + String.join(".", parts)
                + " is not a table name; use [catalog.]database.table in: "
                + sql.strip());
      }
      return parts;
    }

    void end() {
      while (acceptSymbol(";")) {
        // trailing semicolons, as Paimon's grammar allows
      }
      if (pos < tokens.size()) {
        throw error("the end of the statement");
      }
    }

    IllegalArgumentException error(String expected) {
      String found = pos < tokens.size() ? "'" + tokens.get(pos).text + "'" : "the end";
      return new IllegalArgumentException(
          "stratalake: expected "
              + expected
              + " but found "
              + found
              + " in: "
              + sql.strip()
              + " (tag statements: SHOW TAGS t; ALTER TABLE t CREATE [OR REPLACE] TAG [IF NOT"
              + " EXISTS] name [AS OF VERSION n] [RETAIN n DAYS|HOURS|MINUTES]; ALTER TABLE t"
              + " DELETE TAG [IF EXISTS] name[, ...]; ALTER TABLE t RENAME TAG a TO b)");
    }
  }

  /** Words, `quoted identifiers`, 'strings', symbols; comments and spaces dropped; null if unlexable. */
  private static List<Token> tokenize(String sql) {
    List<Token> out = new ArrayList<>();
    int i = 0;
    int n = sql.length();
    while (i < n) {
      char ch = sql.charAt(i);
      if (Character.isWhitespace(ch)) {
        i++;
      } else if (sql.startsWith("--", i)) {
        int end = sql.indexOf('\n', i);
        i = end < 0 ? n : end + 1;
      } else if (sql.startsWith("/*", i)) {
        int end = sql.indexOf("*/", i + 2);
        if (end < 0) {
          return null;
        }
        i = end + 2;
      } else if (Character.isLetterOrDigit(ch) || ch == '_') {
        int j = i;
        while (j < n && (Character.isLetterOrDigit(sql.charAt(j)) || sql.charAt(j) == '_')) {
          j++;
        }
        out.add(new Token(Kind.WORD, sql.substring(i, j)));
        i = j;
      } else if (ch == '`') {
        StringBuilder sb = new StringBuilder();
        int j = i + 1;
        while (true) {
          if (j >= n) {
            return null;
          }
          if (sql.charAt(j) == '`') {
            if (j + 1 < n && sql.charAt(j + 1) == '`') {
              sb.append('`');
              j += 2;
              continue;
            }
            break;
          }
          sb.append(sql.charAt(j++));
        }
        out.add(new Token(Kind.QUOTED, sb.toString()));
        i = j + 1;
      } else if (ch == '\'' || ch == '"') {
        int j = i + 1;
        while (j < n && sql.charAt(j) != ch) {
          j += sql.charAt(j) == '\\' ? 2 : 1;
        }
        if (j >= n) {
          return null;
        }
        out.add(new Token(Kind.STRING, sql.substring(i, j + 1)));
        i = j + 1;
      } else {
        out.add(new Token(Kind.SYMBOL, String.valueOf(ch)));
        i++;
      }
    }
    return out;
  }

  private static String quote(String identifier) {
    return "`" + identifier.replace("`", "``") + "`";
  }

  private static String quoted(List<String> parts) {
    List<String> out = new ArrayList<>();
    for (String p : parts) {
      out.add(quote(p));
    }
    return String.join(".", out);
  }

  /** A Spark SQL string literal holding exactly {@code value}. */
  private static String literal(String value) {
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'";
  }
}
