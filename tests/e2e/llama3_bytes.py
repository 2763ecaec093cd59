"""The llama3 template's rendering over byte_tokenizer.sh's vocabulary (bytes 0-255, then
<|begin_of_text|>, <|start_header_id|>, <|end_header_id|>, <|eot_id|>), written out by hand: what
the prep cases (data_test.sh) compare prep's shards with."""
BOT, SH, EH, EOT = 256, 257, 258, 259


def text(s):
    return list(s.encode())


def prompt(messages):
    """[(role, content), ...] rendered, then the assistant's header (the generation prompt)."""
    ids = [BOT]
    for role, content in messages:
        ids += [SH] + text(role) + [EH] + text("\n\n" + content) + [EOT]
    return ids + [SH] + text("assistant") + [EH] + text("\n\n")
