package io.github.handlestore.examples.cart;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;

/**
 * One add_item call's line, as every twin stores it: {@code {"sku":..,"quantity":..}} and the
 * caller's idempotency key {@code request_id} when it gave one.
 *
 * @param sku the product
 * @param quantity how many (1 to 2^32-1, a uint32 in the Rust and Go twins)
 * @param requestId the caller's idempotency key, or null
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
public record Line(String sku, long quantity, @JsonProperty("request_id") String requestId) {}
