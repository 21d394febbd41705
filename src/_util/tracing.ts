/**
 * Traces, through Deno's built-in OpenTelemetry. Started with `OTEL_DENO=true` (and the standard
 * `OTEL_EXPORTER_OTLP_*` variables), Deno registers its own tracer provider behind
 * `@opentelemetry/api` and exports what is recorded over OTLP; its exporter is part of the
 * runtime, so it needs no `--allow-net` or `--allow-env` of ours. Without it nothing is recorded
 * and `NO_TRACING` does no work at all.
 *
 * A span records names and outcomes only: callers must never put arguments, results, code or
 * output in one (they reach whoever runs the collector).
 */
import {
  type Context,
  context,
  ProxyTracerProvider,
  type Span,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { VERSION } from "./version.ts";

export type TraceAttributes = Record<string, string | number | boolean>;

/** One open span, as the code that opened it sees it. */
export interface TraceSpan {
  /** Adds attributes: names, counts and outcomes, never data. */
  set(attributes: TraceAttributes): void;
  /** Marks the span failed (no message: a message could carry data). */
  fail(): void;
}

export interface Tracing {
  /**
   * Runs `fn` in a new span, ended when `fn` settles (a throw marks it failed and is passed on).
   * The span is a child of `parent` when given, else of the active span. Inside `fn` it is the
   * active span, so an HTTP request made there (Deno's `fetch`) carries its `traceparent`.
   */
  span<T>(name: string, fn: (span: TraceSpan) => Promise<T>, parent?: TraceSpan): Promise<T>;
}

const NO_SPAN: TraceSpan = { set() {}, fail() {} };

/** Records nothing: each span is the call of `fn`, nothing more. */
export const NO_TRACING: Tracing = { span: (_name, fn) => fn(NO_SPAN) };

/** The runtime's tracing: OpenTelemetry when Deno exports it, else `NO_TRACING`. */
export function runtimeTracing(): Tracing {
  // Deno registers a provider of its own only when OTEL_DENO is on; otherwise the API's
  // placeholder (a proxy to no-op tracers) is what is there.
  return trace.getTracerProvider() instanceof ProxyTracerProvider
    ? NO_TRACING
    : openTelemetryTracing();
}

/** Tracing through whatever provider `@opentelemetry/api` holds. */
export function openTelemetryTracing(): Tracing {
  const tracer = trace.getTracer("mcp-code-mode", VERSION);
  return {
    span(name, fn, parent) {
      const within = parent instanceof OpenSpan ? parent.context : context.active();
      const span = tracer.startSpan(name, {}, within);
      const open = new OpenSpan(span, trace.setSpan(within, span));
      return context.with(open.context, async () => {
        try {
          return await fn(open);
        } catch (error) {
          open.set({ "error.type": error instanceof Error ? error.name : typeof error });
          open.fail();
          throw error;
        } finally {
          span.end();
        }
      });
    },
  };
}

class OpenSpan implements TraceSpan {
  constructor(readonly span: Span, readonly context: Context) {}

  set(attributes: TraceAttributes): void {
    this.span.setAttributes(attributes);
  }

  fail(): void {
    this.span.setStatus({ code: SpanStatusCode.ERROR });
  }
}
