import torch
import torch.nn as nn
import torch.nn.functional as F
from harness import checkpoint


# The MNIST network of pytorch/examples (mnist/main.py) at its batch size of 64, trained as its
# train() does (Adadelta aside: SGD with momentum), and evaluated under torch.no_grad().
class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


torch.manual_seed(1)
model = Net().cuda()
checkpoint("model.cuda()")
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
data = torch.randn(64, 1, 28, 28, device="cuda")
target = torch.randint(0, 10, (64,), device="cuda")
model.train()
for step in range(2):
    optimizer.zero_grad()
    output = model(data)
    loss = F.nll_loss(output, target)
    checkpoint(f"step {step} forward")
    loss.backward()
    checkpoint(f"step {step} backward")
    optimizer.step()
    checkpoint(f"step {step} optimizer")
model.eval()
with torch.no_grad():
    output = model(data)
    pred = output.argmax(dim=1, keepdim=True)
checkpoint("evaluation")
