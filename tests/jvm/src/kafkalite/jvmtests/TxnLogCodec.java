package kafkalite.jvmtests;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import kafka.coordinator.transaction.TransactionLog;
import kafka.coordinator.transaction.TransactionMetadata;
import org.apache.kafka.common.TopicPartition;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Decodes __transaction_state records with Kafka 2.8's own TransactionLog reader (the code a
 * Kafka coordinator loads its partitions with). Arguments: KEYHEX:VALUEHEX, "-" for a null
 * value. One JSON line per record: the transactional id and the metadata Kafka read, or the
 * exception it threw.
 */
public final class TxnLogCodec {
    private TxnLogCodec() {}

    static byte[] unhex(String hex) {
        byte[] out = new byte[hex.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }

    public static void main(String[] args) {
        for (String arg : args) {
            String[] parts = arg.split(":", -1);
            try {
                String id = TransactionLog.readTxnRecordKey(ByteBuffer.wrap(unhex(parts[0])))
                    .transactionalId();
                ByteBuffer value = parts[1].equals("-") ? null : ByteBuffer.wrap(unhex(parts[1]));
                Option<TransactionMetadata> read = TransactionLog.readTxnRecordValue(id, value);
                if (read.isEmpty()) {
                    Out.emit("id", id, "tombstone", true);
                    continue;
                }
                TransactionMetadata md = read.get();
                List<String> partitions = new ArrayList<>();
                for (TopicPartition tp : CollectionConverters.asJava(md.topicPartitions())) {
                    partitions.add(tp.toString());
                }
                Collections.sort(partitions);
                Out.emit("id", id, "producer_id", md.producerId(),
                         "producer_epoch", md.producerEpoch(), "timeout_ms", md.txnTimeoutMs(),
                         "state", md.state().toString(), "partitions", partitions,
                         "last_update_ms", md.txnLastUpdateTimestamp(),
                         "start_ms", md.txnStartTimestamp());
            } catch (RuntimeException e) {
                Out.emit("error", e.getClass().getSimpleName(), "message", e.getMessage());
            }
        }
    }
}
