package kafkalite.jvmtests;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * produce BOOTSTRAP TOPIC PER_CODEC BASE_TS: one idempotent producer (acks=all, the
 * KeyPrefixPartitioner) per compression codec, each sending PER_CODEC records with headers; prints
 * every record sent with its RecordMetadata ("sent" lines).
 *
 * consume BOOTSTRAP TOPIC GROUP COUNT: a subscribed consumer reads COUNT records from the
 * beginning and prints each ("consumed" lines).
 */
public class ProduceConsume {
    static final String[] CODECS = {"none", "gzip", "snappy", "lz4", "zstd"};

    public static void main(String[] args) throws Exception {
        if (args[0].equals("produce")) {
            produce(args[1], args[2], Integer.parseInt(args[3]), Long.parseLong(args[4]));
        } else {
            consume(args[1], args[2], args[3], Integer.parseInt(args[4]));
        }
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static void produce(String bootstrap, String topic, int perCodec, long baseTs) throws Exception {
        for (String codec : CODECS) {
            Properties props = new Properties();
            props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
            props.put(ProducerConfig.ACKS_CONFIG, "all");
            props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
            props.put(ProducerConfig.LINGER_MS_CONFIG, "20");
            props.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5");
            props.put(ProducerConfig.PARTITIONER_CLASS_CONFIG, KeyPrefixPartitioner.class.getName());
            props.put(ProducerConfig.CLIENT_ID_CONFIG, "jvm-producer-" + codec);
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(
                    props, new ByteArraySerializer(), new ByteArraySerializer())) {
                for (int i = 0; i < perCodec; i++) {
                    byte[] key = (i % 7 == 6) ? null : utf8(i + ":" + codec + "-" + i);
                    byte[] value;
                    if (i % 9 == 8) {
                        value = null;
                    } else {
                        // compressible text, then every byte value
                        StringBuilder sb = new StringBuilder();
                        for (int j = 0; j < 20 + i; j++) {
                            sb.append(codec).append(" record ").append(i).append(';');
                        }
                        byte[] text = utf8(sb.toString());
                        value = new byte[text.length + 256];
                        System.arraycopy(text, 0, value, 0, text.length);
                        for (int b = 0; b < 256; b++) {
                            value[text.length + b] = (byte) (b + i);
                        }
                    }
                    RecordHeaders headers = new RecordHeaders();
                    headers.add(new RecordHeader("codec", utf8(codec)));
                    headers.add(new RecordHeader("dup", utf8("1")));
                    headers.add(new RecordHeader("dup", utf8("2")));
                    if (i % 3 == 0) {
                        headers.add(new RecordHeader("empty", new byte[0]));
                    }
                    if (i % 4 == 0) {
                        headers.add(new RecordHeader("null", null));
                    }
                    headers.add(new RecordHeader("bin", new byte[] {0, (byte) 0xff, (byte) i}));
                    // every other record carries its own timestamp, the rest the producer's clock
                    Long ts = (i % 2 == 0) ? baseTs + i : null;
                    ProducerRecord<byte[], byte[]> record =
                        new ProducerRecord<>(topic, null, ts, key, value, headers);
                    records.add(record);
                    futures.add(producer.send(record));
                }
                producer.flush();
                for (int i = 0; i < records.size(); i++) {
                    RecordMetadata md = futures.get(i).get();
                    ProducerRecord<byte[], byte[]> r = records.get(i);
                    Out.emit("event", "sent", "codec", codec, "partition", md.partition(),
                             "offset", md.offset(), "timestamp", md.timestamp(),
                             "key", Out.hex(r.key()), "value", Out.hex(r.value()),
                             "headers", Out.headers(r.headers()));
                }
            }
        }
    }

    static void consume(String bootstrap, String topic, String group, int count) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(
                props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic));
            int seen = 0;
            long deadline = System.currentTimeMillis() + 60_000;
            while (seen < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    Out.emit("event", "consumed", "record", Out.record(r));
                    seen++;
                }
            }
            consumer.commitSync();
            Out.emit("event", "done", "consumed", seen);
        }
    }
}
