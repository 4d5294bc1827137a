package dev.leases.redis;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisKeyAsyncCommands;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import io.lettuce.core.resource.ClientResources;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/** Opens the store's connections from a standalone or a cluster client, and owns what it made. */
abstract class Connector {

  /**
   * A command connection, its scripting API and its key API (whose {@code SCAN}, on a cluster,
   * visits every primary in turn).
   *
   * @param cluster whether the keys of one script must share a cluster slot
   */
  record Commands(StatefulConnection<String, String> connection,
      RedisScriptingAsyncCommands<String, String> scripting,
      RedisKeyAsyncCommands<String, String> keys, boolean cluster) {}

  abstract CompletableFuture<Commands> connect();

  abstract CompletableFuture<? extends StatefulRedisPubSubConnection<String, String>> connectPubSub();

  /** Shuts down the client and resources this connector created; never a user's client. */
  abstract void shutdown(Duration timeout);

  abstract String describe();

  static Connector standalone(RedisClient client, RedisURI uri, @Nullable ClientResources ownedResources) {
    return new Connector() {
      @Override
      CompletableFuture<Commands> connect() {
        return client.connectAsync(StringCodec.UTF8, uri).toCompletableFuture()
            .thenApply((StatefulRedisConnection<String, String> c) ->
                new Commands(c, c.async(), c.async(), false));
      }

      @Override
      CompletableFuture<StatefulRedisPubSubConnection<String, String>> connectPubSub() {
        return client.connectPubSubAsync(StringCodec.UTF8, uri).toCompletableFuture();
      }

      @Override
      void shutdown(Duration timeout) {
        if (ownedResources != null) {
          client.shutdown(Duration.ZERO, timeout);
          ownedResources.shutdown(0, timeout.toMillis(), TimeUnit.MILLISECONDS)
              .awaitUninterruptibly(timeout.toMillis());
        }
      }

      /** The URI without its user info: Lettuce masks the password, not its length. */
      @Override
      String describe() {
        return uri.toString().replaceFirst("//[^/@]*@", "//");
      }
    };
  }

  static Connector cluster(RedisClusterClient client) {
    return new Connector() {
      @Override
      CompletableFuture<Commands> connect() {
        // connectAsync refuses a client whose topology was never loaded ("Partitions not
        // initialized"); load it asynchronously first, so that the caller's bound covers it
        return client.refreshPartitionsAsync().toCompletableFuture()
            .thenCompose(v -> client.connectAsync(StringCodec.UTF8))
            .thenApply((StatefulRedisClusterConnection<String, String> c) ->
                new Commands(c, c.async(), c.async(), true));
      }

      @Override
      CompletableFuture<? extends StatefulRedisPubSubConnection<String, String>> connectPubSub() {
        return client.refreshPartitionsAsync().toCompletableFuture()
            .thenCompose(v -> client.connectPubSubAsync(StringCodec.UTF8));
      }


      @Override
      void shutdown(Duration timeout) {
        // a cluster client is always the user's
      }

      @Override
      String describe() {
        return "Redis Cluster client";
      }
    };
  }
}
