// A local class called OpenAI, not the SDK.
class OpenAI {
  constructor(opts = {}) {
    this.opts = opts;
  }
}

export const local = new OpenAI();
