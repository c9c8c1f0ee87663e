package kafkalite.jvmtests;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.kafka.clients.producer.Partitioner;
import org.apache.kafka.common.Cluster;

/**
 * A custom partitioner: a key "N:..." goes to partition N modulo the topic's partition count; a
 * record without a key goes to the last partition. The tests recompute this rule in Python.
 */
public class KeyPrefixPartitioner implements Partitioner {
    @Override
    public int partition(String topic, Object key, byte[] keyBytes, Object value,
                         byte[] valueBytes, Cluster cluster) {
        int count = cluster.partitionsForTopic(topic).size();
        if (keyBytes == null) {
            return count - 1;
        }
        String text = new String(keyBytes, StandardCharsets.UTF_8);
        return Integer.parseInt(text.substring(0, text.indexOf(':'))) % count;
    }

    @Override
    public void close() {}

    @Override
    public void configure(Map<String, ?> configs) {}
}
