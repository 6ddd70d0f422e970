// Renders API Gateway mapping templates on Apache Velocity 1.7, the engine API Gateway uses.
//
// stdin: a JSON array of cases {"template", "body", "headers", "requestId"}; stdout: a JSON
// array of {"output", "status"} (status: what the template set in
// $context.responseOverride.status, or null). The variables follow API Gateway's mapping
// template reference: $input (body, json(path), path(path), params()), $util
// (escapeJavaScript from commons-lang 2.6, parseJson), $context (requestId,
// responseOverride). JSONPath is the subset the templates use: "$" and "$.a.b".
// The JSON reader and writer below exist only because the harness may use nothing but
// Velocity and commons-lang (Debian packages).

import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.commons.lang.StringEscapeUtils;
import org.apache.velocity.VelocityContext;
import org.apache.velocity.app.VelocityEngine;

public class VelocityHarness {
    public static void main(String[] args) throws Exception {
        String stdin = new String(System.in.readAllBytes(), StandardCharsets.UTF_8);
        VelocityEngine engine = new VelocityEngine();
        engine.setProperty("runtime.log.logsystem.class", "org.apache.velocity.runtime.log.NullLogChute");
        engine.init();
        List<Object> results = new ArrayList<>();
        for (Object raw : (List<?>) new Json(stdin).value()) {
            Map<?, ?> c = (Map<?, ?>) raw;
            Map<String, Object> override = new HashMap<>();
            override.put("header", new HashMap<String, Object>());
            Map<String, Object> context = new HashMap<>();
            context.put("requestId", c.get("requestId"));
            context.put("responseOverride", override);
            VelocityContext vc = new VelocityContext();
            vc.put("input", new Input((String) c.get("body"), (Map<?, ?>) c.get("headers")));
            vc.put("util", new Util());
            vc.put("context", context);
            StringWriter out = new StringWriter();
            engine.evaluate(vc, out, "template", (String) c.get("template"));
            Map<String, Object> result = new LinkedHashMap<>();
            result.put("output", out.toString());
            result.put("status", override.get("status"));
            results.add(result);
        }
        System.out.write(Json.write(results).getBytes(StandardCharsets.UTF_8));
        System.out.flush();
    }

    public static class Util {
        public String escapeJavaScript(String text) { return StringEscapeUtils.escapeJavaScript(text); }
        public Object parseJson(String text) { return new Json(text).value(); }
    }

    public static class Input {
        private final String body;
        private final Map<?, ?> headers;
        Input(String body, Map<?, ?> headers) { this.body = body; this.headers = headers; }
        public String getBody() { return body; }
        public Map<String, Object> params() {
            Map<String, Object> params = new HashMap<>();
            params.put("header", headers == null ? new HashMap<>() : headers);
            params.put("querystring", new HashMap<>());
            params.put("path", new HashMap<>());
            return params;
        }
        public Object path(String path) { return select(new Json(body).value(), path); }
        public String json(String path) { return Json.write(path(path)); }
        private static Object select(Object node, String path) {
            if (!path.startsWith("$")) throw new IllegalArgumentException("JSONPath must start with $");
            for (String key : path.substring(1).split("\\.")) {
                if (key.isEmpty()) continue;
                node = node instanceof Map ? ((Map<?, ?>) node).get(key) : null;
            }
            return node;
        }
    }

    /** A strict JSON reader (objects keep their order; integers are Integer or Long). */
    static final class Json {
        private final String s;
        private int i;
        Json(String s) { this.s = s; }
        Object value() {
            Object v = read();
            skip();
            if (i != s.length()) throw error("trailing text");
            return v;
        }
        private Object read() {
            skip();
            if (i >= s.length()) throw error("unexpected end");
            char c = s.charAt(i);
            if (c == '{') return object();
            if (c == '[') return array();
            if (c == '"') return string();
            if (s.startsWith("true", i)) { i += 4; return Boolean.TRUE; }
            if (s.startsWith("false", i)) { i += 5; return Boolean.FALSE; }
            if (s.startsWith("null", i)) { i += 4; return null; }
            return number();
        }
        private Map<String, Object> object() {
            Map<String, Object> map = new LinkedHashMap<>();
            i++;
            skip();
            if (s.charAt(i) == '}') { i++; return map; }
            while (true) {
                skip();
                String key = string();
                skip();
                expect(':');
                map.put(key, read());
                skip();
                if (s.charAt(i) == ',') { i++; continue; }
                expect('}');
                return map;
            }
        }
        private List<Object> array() {
            List<Object> list = new ArrayList<>();
            i++;
            skip();
            if (s.charAt(i) == ']') { i++; return list; }
            while (true) {
                list.add(read());
                skip();
                if (s.charAt(i) == ',') { i++; continue; }
                expect(']');
                return list;
            }
        }
        private String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (true) {
                char c = s.charAt(i++);
                if (c == '"') return b.toString();
                if (c < 0x20) throw error("control character in a string");
                if (c != '\\') { b.append(c); continue; }
                char e = s.charAt(i++);
                switch (e) {
                    case '"': b.append('"'); break;
                    case '\\': b.append('\\'); break;
                    case '/': b.append('/'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'n': b.append('\n'); break;
                    case 'r': b.append('\r'); break;
                    case 't': b.append('\t'); break;
                    case 'u': b.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
                    default: throw error("bad escape \\" + e);
                }
            }
        }
        private Object number() {
            int start = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
            String text = s.substring(start, i);
            if (text.isEmpty()) throw error("unexpected character");
            if (text.matches("-?\\d+")) {
                long n = Long.parseLong(text);
                return n == (int) n ? (Object) (int) n : (Object) n;
            }
            return Double.parseDouble(text);
        }
        private void skip() { while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) i++; }
        private void expect(char c) {
            if (i >= s.length() || s.charAt(i) != c) throw error("expected " + c);
            i++;
        }
        private IllegalArgumentException error(String what) {
            return new IllegalArgumentException(what + " at " + i);
        }

        static String write(Object v) {
            if (v == null) return "null";
            if (v instanceof String) return quote((String) v);
            if (v instanceof Boolean || v instanceof Number) return v.toString();
            StringBuilder b = new StringBuilder();
            if (v instanceof Map) {
                b.append('{');
                String sep = "";
                for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                    b.append(sep).append(quote(e.getKey().toString())).append(':').append(write(e.getValue()));
                    sep = ",";
                }
                return b.append('}').toString();
            }
            if (v instanceof List) {
                b.append('[');
                String sep = "";
                for (Object item : (List<?>) v) { b.append(sep).append(write(item)); sep = ","; }
                return b.append(']').toString();
            }
            throw new IllegalArgumentException("cannot write " + v.getClass());
        }
        private static String quote(String text) {
            StringBuilder b = new StringBuilder("\"");
            for (char c : text.toCharArray()) {
                if (c == '"' || c == '\\') b.append('\\').append(c);
                else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                else b.append(c);
            }
            return b.append('"').toString();
        }
    }
}
