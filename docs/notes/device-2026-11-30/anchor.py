"""anchor.py: where the anchor spends its time (issue 41): torch.compile
(mode="reduce-overhead", dynamic=False) of Hugging Face BertModel (base,
sequence 128) and torchvision vit_b_16 at batch 16, float32 with TF32,
profiled with torch.profiler over 20 replays; each kernel's CUDA time
summed, the top 25 per network, to $OUT/anchor.<net>.txt."""
import os, sys, time
import torch

torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
out = os.environ.get("OUT", "/tmp")


def build(name):
    if name == "bert":
        import transformers as tf
        m = tf.BertModel(tf.BertConfig()).eval().cuda()
        x = torch.randint(0, 30522, (16, 128), device="cuda")
        return (lambda cm: cm(input_ids=x)), m
    import torchvision
    m = torchvision.models.vit_b_16().eval().cuda()
    x = torch.randn(16, 3, 224, 224, device="cuda")
    return (lambda cm: cm(x)), m


for name in sys.argv[1:] or ["bert", "vit_b_16"]:
    call, m = build(name)
    with torch.no_grad():
        cm = torch.compile(m, mode="reduce-overhead", dynamic=False)
        for _ in range(5):
            call(cm)
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(50):
            call(cm)
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t) / 50 * 1e3
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            for _ in range(20):
                call(cm)
            torch.cuda.synchronize()
    tab = p.key_averages().table(sort_by="cuda_time_total", row_limit=25,
                                 max_name_column_width=90)
    with open(f"{out}/anchor.{name}.txt", "w") as f:
        f.write(f"{name} b16 f32 (TF32) reduce-overhead: {ms:.4f} ms a call "
                f"(wall, 50 calls); profile over 20 calls:\n{tab}\n")
    print(name, f"{ms:.4f} ms")
