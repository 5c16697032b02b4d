package org.stratalake.spark.sql;

/**
 * Rewrites Flink/Paimon style table options, {@code CREATE TABLE t (...) WITH ('k'='v')}, into
 * Spark's {@code TBLPROPERTIES ('k'='v')}. Everything else is returned unchanged.
 *
 * <p>The scan is token-aware rather than a regex: string literals, quoted identifiers and
 * comments are skipped whole, only a {@code WITH} at parenthesis depth 0 that is directly
 * followed by {@code (} counts, and scanning stops at a top-level {@code AS}, so the {@code WITH}
 * of a CTE in CREATE TABLE ... AS WITH ... SELECT is never touched.
 */
public final class WithClauseRewriter {
  private WithClauseRewriter() {}

  /** Returns {@code sql} with its table-options {@code WITH} replaced, or {@code sql} itself. */
  public static String rewrite(String sql) {
    Scanner s = new Scanner(sql);
    String first = s.nextWord();
    if (first == null) {
      return sql;
    }
    if (!first.equalsIgnoreCase("CREATE") && !first.equalsIgnoreCase("REPLACE")) {
      return sql;
    }
    // The statement must name a TABLE before anything else happens (not a VIEW, FUNCTION...).
    boolean isTable = false;
    while (!isTable) {
      String w = s.nextWord();
      if (w == null) {
        return sql;
      }
      if (w.equalsIgnoreCase("TABLE")) {
        isTable = true;
      } else if (!(w.equalsIgnoreCase("OR")
          || w.equalsIgnoreCase("REPLACE")
          || w.equalsIgnoreCase("EXTERNAL")
          || w.equalsIgnoreCase("TEMPORARY"))) {
        return sql;
      }
    }
    int depth = 0;
    while (true) {
      int tokenStart = s.next();
      if (tokenStart < 0) {
        return sql;
      }
      char c = sql.charAt(tokenStart);
      if (c == '(') {
        depth++;
      } else if (c == ')') {
        depth--;
      } else if (depth == 0 && Scanner.isWordChar(c)) {
        String word = sql.substring(tokenStart, s.pos);
        if (word.equalsIgnoreCase("AS")) {
          return sql;
        }
        if (word.equalsIgnoreCase("WITH")) {
          int wordEnd = s.pos;
          int following = s.next();
          if (following >= 0 && sql.charAt(following) == '(') {
            return sql.substring(0, tokenStart) + "TBLPROPERTIES" + sql.substring(wordEnd);
          }
          if (following >= 0) {
            s.pos = following; // re-scan that token normally
          }
        }
      }
    }
  }

  /** A minimal Spark SQL lexer: enough to tell code from literals, identifiers and comments. */
  private static final class Scanner {
    private final String sql;
    int pos;

    Scanner(String sql) {
      this.sql = sql;
    }

    static boolean isWordChar(char c) {
      return Character.isLetterOrDigit(c) || c == '_';
    }

    /** The next word token, skipping anything else; null at the end. */
    String nextWord() {
      while (true) {
        int start = next();
        if (start < 0) {
          return null;
        }
        if (isWordChar(sql.charAt(start))) {
          return sql.substring(start, pos);
        }
      }
    }

    /**
     * Advances past the next significant token (skipping whitespace and comments) and returns
     * where it started, or -1 at the end. Literals and quoted identifiers are single tokens.
     */
    int next() {
      skipTrivia();
      int n = sql.length();
      if (pos >= n) {
        return -1;
      }
      int start = pos;
      char c = sql.charAt(pos);
      if (c == '\'' || c == '"') {
        skipQuoted(c, true);
      } else if (c == '`') {
        skipQuoted('`', false);
      } else if (isWordChar(c)) {
        // R'...' is a raw string literal: no backslash escapes inside.
        if ((c == 'r' || c == 'R') && pos + 1 < n
            && (sql.charAt(pos + 1) == '\'' || sql.charAt(pos + 1) == '"')) {
          pos++;
          skipQuoted(sql.charAt(pos), false);
          return start;
        }
        while (pos < n && isWordChar(sql.charAt(pos))) {
          pos++;
        }
      } else {
        pos++;
      }
      return start;
    }

    private void skipQuoted(char quote, boolean backslashEscapes) {
      int n = sql.length();
      pos++; // opening quote
      while (pos < n) {
        char c = sql.charAt(pos);
        if (backslashEscapes && c == '\\') {
          pos += 2;
        } else if (c == quote) {
          pos++;
          // A doubled quote continues the same token (`` in identifiers, '' in strings).
          if (pos < n && sql.charAt(pos) == quote) {
            pos++;
          } else {
            return;
          }
        } else {
          pos++;
        }
      }
    }

    private void skipTrivia() {
      int n = sql.length();
      while (pos < n) {
        char c = sql.charAt(pos);
        if (Character.isWhitespace(c)) {
          pos++;
        } else if (c == '-' && pos + 1 < n && sql.charAt(pos + 1) == '-') {
          while (pos < n && sql.charAt(pos) != '\n') {
            pos++;
          }
        } else if (c == '/' && pos + 1 < n && sql.charAt(pos + 1) == '*') {
          // Spark allows nested bracketed comments.
          int level = 0;
          while (pos < n) {
            if (sql.startsWith("/*", pos)) {
              level++;
              pos += 2;
            } else if (sql.startsWith("*/", pos)) {
              level--;
              pos += 2;
              if (level == 0) {
                break;
              }
            } else {
              pos++;
            }
          }
        } else {
          return;
        }
      }
    }
  }

  /** Rewrites standard input to standard output: a quick way to try the rewrite by hand. */
  public static void main(String[] args) throws java.io.IOException {
    String sql = new String(System.in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    System.out.print(rewrite(sql));
  }
}
