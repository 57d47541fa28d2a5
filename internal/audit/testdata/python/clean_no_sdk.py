# Talks about OpenAI() and Anthropic() without importing either SDK.
def OpenAI(**kwargs):
    return kwargs


client = OpenAI()
