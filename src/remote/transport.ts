/**
 * One HTTP POST to a remote endpoint, with a hard deadline and a cap on the body size.
 *
 * Written on node:http/https with keep-alive agents rather than the global `fetch`: the agents
 * belong to this client (closing the engine closes its sockets, whatever else the app does with
 * undici's shared dispatcher), one timer covers connecting, waiting and reading to the last byte,
 * and a body is counted while it streams, so a huge answer is cut off before it fills memory.
 */
import http from 'node:http';
import https from 'node:https';

/** A complete reply: status code and body text. */
export interface HttpReply {
  status: number;
  text: string;
}

/** Why no complete reply arrived. */
export class TransportError extends Error {
  constructor(
    readonly kind: 'network' | 'timeout' | 'too-large',
    message: string,
  ) {
    super(message);
  }
}

/** Sockets kept open per endpoint between calls. */
const MAX_SOCKETS = 64;

/** Keep-alive HTTP(S) agents for one remote client. */
export class Transport {
  readonly #http = new http.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS });
  readonly #https = new https.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS });
  readonly #maxBytes: number;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** POSTs a JSON body; rejects with a {@link TransportError}. */
  post(url: URL, body: string, timeoutMs: number): Promise<HttpReply> {
    const tls = url.protocol === 'https:';
    return new Promise((resolve, reject) => {
      let settled = false;
      const settle = (err: TransportError | undefined, reply?: HttpReply) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) {
          req.destroy();
          reject(err);
        } else resolve(reply as HttpReply);
      };
      const options: http.RequestOptions = {
        method: 'POST',
        agent: tls ? this.#https : this.#http,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          accept: 'application/json',
        },
      };
      const req = (tls ? https : http).request(url, options, (res) => {
        const declared = Number(res.headers['content-length']);
        if (declared > this.#maxBytes) {
          settle(new TransportError('too-large', `the answer declares ${declared} bytes`));
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > this.#maxBytes) {
            settle(new TransportError('too-large', `the answer is larger than ${this.#maxBytes} bytes`));
          } else chunks.push(chunk);
        });
        res.on('end', () =>
          settle(undefined, { status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', (err) => settle(new TransportError('network', err.message)));
        res.on('close', () => {
          if (!res.complete) settle(new TransportError('network', 'the connection closed mid-answer'));
        });
      });
      const timer = setTimeout(
        () => settle(new TransportError('timeout', `no complete answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
      req.on('error', (err) => settle(new TransportError('network', err.message)));
      req.end(body);
    });
  }

  /** Closes every kept-alive socket. */
  close(): void {
    this.#http.destroy();
    this.#https.destroy();
  }
}
