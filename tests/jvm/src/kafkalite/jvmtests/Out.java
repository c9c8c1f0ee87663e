package kafkalite.jvmtests;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

/** JSON lines on stdout, one per event, read by the pytest that started the program. */
public final class Out {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private Out() {}

    /** An ordered map from alternating keys and values. */
    public static Map<String, Object> obj(Object... keysAndValues) {
        Map<String, Object> map = new LinkedHashMap<>();
        for (int i = 0; i < keysAndValues.length; i += 2) {
            map.put((String) keysAndValues[i], keysAndValues[i + 1]);
        }
        return map;
    }

    public static synchronized void emit(Object... keysAndValues) {
        try {
            System.out.println(MAPPER.writeValueAsString(obj(keysAndValues)));
            System.out.flush();
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    public static String hex(byte[] bytes) {
        if (bytes == null) {
            return null;
        }
        StringBuilder sb = new StringBuilder();
        for (byte b : bytes) {
            sb.append(String.format("%02x", b & 0xff));
        }
        return sb.toString();
    }

    public static List<List<String>> headers(Iterable<Header> headers) {
        List<List<String>> out = new ArrayList<>();
        for (Header h : headers) {
            List<String> pair = new ArrayList<>();
            pair.add(h.key());
            pair.add(hex(h.value()));
            out.add(pair);
        }
        return out;
    }

    /** A consumed record as the tests compare it across clients. */
    public static Map<String, Object> record(ConsumerRecord<byte[], byte[]> r) {
        return obj("topic", r.topic(), "partition", r.partition(), "offset", r.offset(),
                   "timestamp", r.timestamp(), "timestamp_type", r.timestampType().name,
                   "key", hex(r.key()), "value", hex(r.value()), "headers", headers(r.headers()));
    }
}
